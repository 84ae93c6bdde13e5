# -*- coding: utf-8 -*-
# Copyright: Contributors to the eksops.nodegroup project
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""The drain engine (SPEC D1-D16, C1, U4, U5, P4): pure rules as tables, then the engine on a fake API."""

from __future__ import annotations

import datetime
import json
import os
import random
import socketserver
import sys
import threading
import time

import pytest
from kubernetes.client.exceptions import ApiException

from ansible_collections.eksops.nodegroup.plugins.module_utils._drain import api as drain_api, deadlines, eviction, filters, pods as drain_pods
from ansible_collections.eksops.nodegroup.plugins.module_utils._drain.budget_gate import matching_pdbs
from ansible_collections.eksops.nodegroup.plugins.module_utils._drain.cordon import (
    AUTOSCALER_TAINT,
    EXCLUDE_LB_LABEL,
    apply_merge_patch,
    check_not_autoscaler_target,
    cordon_patch,
    uncordon_patch,
)
from ansible_collections.eksops.nodegroup.plugins.module_utils._drain.deadlines import (
    Deadline,
    PdbWaitTracker,
    force_wait_seconds,
)
from ansible_collections.eksops.nodegroup.plugins.module_utils._drain.eviction import (
    ACCEPTED,
    FAILED,
    GONE,
    MULTIPLE_PDBS,
    PDB_BLOCKED,
    TERMINATING_NAMESPACE,
    THROTTLED,
    TRANSIENT,
    classify_eviction,
)
from ansible_collections.eksops.nodegroup.plugins.module_utils._drain.filters import (
    REFUSE,
    REMOVE,
    SKIP,
    Verdict,
    WAIT,
    WARN,
    decide_pod,
    plan_node,
    refusal_message,
)
from ansible_collections.eksops.nodegroup.plugins.module_utils._drain.pods import is_gone, parse_time
from ansible_collections.eksops.nodegroup.plugins.module_utils._drain.scheduler import EvictionScheduler
from ansible_collections.eksops.nodegroup.plugins.module_utils.drain import (
    DrainOptions,
    cordon_nodes,
    drain_nodes,
    uncordon_nodes,
)
from ansible_collections.eksops.nodegroup.plugins.module_utils.errors import UpgradeError
from ansible_collections.eksops.nodegroup.plugins.module_utils.journal import CORDONED_BY_ANNOTATION
from ansible_collections.eksops.nodegroup.plugins.module_utils.label_selector import (
    parse_label_selector,
    selector_matches,
)

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from test_kube_watch import FakeClock, FakeResponse, FakeStore, api_error  # noqa: E402  (shared fake API server)

NOW = datetime.datetime(2024, 6, 1, 12, 0, 0, tzinfo=datetime.timezone.utc)


def make_pod(name, node="node-a", namespace="default", owner="ReplicaSet", phase="Running", empty_dir=False,
             mirror=False, deleting_for=None, labels=None, uid=None, grace=None):
    metadata = {"name": name, "namespace": namespace, "uid": uid or "uid-" + name,
                "labels": labels if labels is not None else {"app": "web"}}
    if owner:
        metadata["ownerReferences"] = [{"kind": owner, "name": owner.lower() + "-1", "controller": True,
                                        "apiVersion": "apps/v1", "uid": "owner"}]
    if mirror:
        metadata["annotations"] = {"kubernetes.io/config.mirror": "hash"}
    if deleting_for is not None:
        metadata["deletionTimestamp"] = (NOW - datetime.timedelta(seconds=deleting_for)).strftime(
            "%Y-%m-%dT%H:%M:%SZ")
    spec = {"nodeName": node, "volumes": [{"name": "v", "emptyDir": {}}] if empty_dir
            else [{"name": "h", "hostPath": {"path": "/var"}}]}
    if grace is not None:
        spec["terminationGracePeriodSeconds"] = grace
    return {"metadata": metadata, "spec": spec, "status": {"phase": phase}}


def opts(**kwargs):
    kwargs.setdefault("run_id", "run-1")
    return DrainOptions(**kwargs)


def exists(namespace, name):
    return True


def missing(namespace, name):
    return False


# ----------------------------------------------------------------------------------------------------------
# Filters, one table per rule (D3-D10)
# ----------------------------------------------------------------------------------------------------------

@pytest.mark.parametrize("deleting_for, skip_wait, expected", [
    (None, 0, REMOVE),
    (5, 0, WAIT),            # D4: terminating pods are waited for ...
    (5, 10, WAIT),           # ... unless older than skip_wait_for_delete_timeout
    (30, 10, SKIP),
])
def test_D4_terminating_pods(deleting_for, skip_wait, expected):
    decision = decide_pod(make_pod("p", deleting_for=deleting_for), opts(skip_wait_for_delete_timeout=skip_wait),
                          exists, NOW)
    assert decision.action == expected


@pytest.mark.parametrize("ignore, ds_exists, force, phase, expected, reason_part", [
    (True, True, False, "Running", SKIP, "ignore_daemonsets"),
    (False, True, False, "Running", REFUSE, "set ignore_daemonsets"),
    (True, False, False, "Running", REFUSE, "is gone"),
    (True, False, True, "Running", REMOVE, None),
    (False, True, False, "Succeeded", REMOVE, None),   # D9: finished pods pass
])
def test_D5_daemonset_pods(ignore, ds_exists, force, phase, expected, reason_part):
    decision = decide_pod(make_pod("ds", owner="DaemonSet", phase=phase),
                          opts(ignore_daemonsets=ignore, force=force), exists if ds_exists else missing, NOW)
    assert decision.action == expected
    if reason_part:
        assert reason_part in decision.reason
    if expected == REMOVE and not ds_exists:
        assert any("DaemonSet" in w for w in decision.warnings)


def test_D6_mirror_pods_are_skipped_silently():
    decision = decide_pod(make_pod("static", owner="Node", mirror=True), opts(), exists, NOW)
    assert decision.action == SKIP and decision.reason == "mirror pod" and decision.warnings == []


@pytest.mark.parametrize("empty_dir, allow, phase, expected, warned", [
    (True, True, "Running", REMOVE, True),
    (True, False, "Running", REFUSE, False),
    (True, False, "Failed", REMOVE, False),   # D9
    (False, False, "Running", REMOVE, False),  # hostPath is not local storage
])
def test_D7_emptydir_pods(empty_dir, allow, phase, expected, warned):
    decision = decide_pod(make_pod("cache", empty_dir=empty_dir, phase=phase), opts(delete_emptydir_data=allow),
                          exists, NOW)
    assert decision.action == expected
    assert bool(decision.warnings) == warned


@pytest.mark.parametrize("force, phase, expected", [
    (False, "Running", REFUSE),
    (True, "Running", REMOVE),
    (False, "Succeeded", REMOVE),   # D9
    (False, "Failed", REMOVE),
])
def test_D8_pods_without_controller(force, phase, expected):
    decision = decide_pod(make_pod("bare", owner=None, phase=phase), opts(force=force), exists, NOW)
    assert decision.action == expected
    if expected == REFUSE:
        assert "use force" in decision.reason


def test_D3_filter_order_first_refusal_decides():
    # A DaemonSet pod that is also a mirror pod with emptyDir: the DaemonSet filter comes first.
    pod = make_pod("x", owner="DaemonSet", mirror=True, empty_dir=True)
    assert decide_pod(pod, opts(ignore_daemonsets=False, delete_emptydir_data=False), exists, NOW).reason == \
        "DaemonSet-managed pod (set ignore_daemonsets)"
    # Terminating long enough beats every later filter, even a refusal.
    pod = make_pod("y", owner=None, deleting_for=100)
    assert decide_pod(pod, opts(skip_wait_for_delete_timeout=10), exists, NOW).action == SKIP
    # Warnings from passing filters accumulate until a later filter refuses.
    pod = make_pod("z", owner=None, empty_dir=True)
    decision = decide_pod(pod, opts(force=False), exists, NOW)
    assert decision.action == REFUSE and decision.warnings == ["pod with emptyDir data; the data is deleted"]


def test_D3_each_filter_in_order():
    assert [f.__name__ for f in filters.POD_FILTERS] == [
        "deleting_filter", "daemonset_filter", "mirror_filter", "local_storage_filter", "unreplicated_filter"]


def test_D10_one_refusal_blocks_the_node_and_lists_all_refusals_by_reason():
    pods = [make_pod("web-1"), make_pod("bare-1", owner=None), make_pod("bare-2", owner=None),
            make_pod("cache-1", empty_dir=True), make_pod("agent", owner="DaemonSet")]
    plan = plan_node(pods, opts(delete_emptydir_data=False), exists, NOW)
    assert plan.blocked
    assert [r["pod"] for r in plan.refused] == ["default/bare-1", "default/bare-2", "default/cache-1"]
    assert plan.skipped == [{"pod": "default/agent", "reason": "DaemonSet-managed pod (ignore_daemonsets)"}]
    message = refusal_message("node-a", plan.refused)
    assert "nothing was evicted" in message
    assert "pod not managed by a controller (use force): default/bare-1, default/bare-2" in message
    assert "pod with emptyDir data (set delete_emptydir_data): default/cache-1" in message


def test_D9_finished_pods_pass_all_filters():
    pods = [make_pod("done", owner=None, phase="Succeeded", empty_dir=True),
            make_pod("crashed", owner=None, phase="Failed")]
    plan = plan_node(pods, opts(delete_emptydir_data=False), exists, NOW)
    assert not plan.blocked and len(plan.remove) == 2


def test_parse_time_accepts_fractions_and_z():
    assert parse_time("2024-06-01T12:00:00Z") == NOW
    assert parse_time("2024-06-01T12:00:00.5Z") == NOW + datetime.timedelta(microseconds=500000)
    assert parse_time(None) is None


# ----------------------------------------------------------------------------------------------------------
# Eviction outcomes (D13)
# ----------------------------------------------------------------------------------------------------------

PDB_STATUS = {"kind": "Status", "code": 429, "reason": "TooManyRequests",
              "message": "Cannot evict pod as it would violate the pod's disruption budget.",
              "details": {"causes": [{"type": "DisruptionBudget",
                                      "message": "The disruption budget web-pdb needs 3 healthy pods and has 3 "
                                                 "currently"}]}}


@pytest.mark.parametrize("status, headers, body, kind, pdb", [
    (201, None, None, ACCEPTED, None),
    (404, None, {"message": "not found"}, GONE, None),
    (409, None, {"message": "Precondition failed: UID in precondition"}, GONE, None),   # D11
    (429, {}, PDB_STATUS, PDB_BLOCKED, "web-pdb"),
    (429, {"Retry-After": "3"}, {"message": "too many requests"}, THROTTLED, None),
    (429, {"Retry-After": "10"}, PDB_STATUS, PDB_BLOCKED, "web-pdb"),  # E4: PDB not yet observed
    (500, None, {"message": "This pod has more than one PodDisruptionBudget, which the eviction subresource "
                            "does not support."}, MULTIPLE_PDBS, None),
    (500, None, {"message": "etcd timeout"}, TRANSIENT, None),
    (503, None, {"message": "unavailable"}, TRANSIENT, None),
    (None, None, "connection reset", TRANSIENT, None),
    (403, None, {"message": "forbidden", "details": {"causes": [{"type": "NamespaceTerminating"}]}},
     TERMINATING_NAMESPACE, None),
    (403, None, {"message": "forbidden"}, FAILED, None),
    (422, None, "not json", FAILED, None),
])
def test_D13_classification(status, headers, body, kind, pdb):
    outcome = classify_eviction(status, headers, json.dumps(body) if isinstance(body, dict) else body)
    assert outcome.kind == kind
    assert outcome.pdb == pdb


def test_D13_a_plain_500_is_retried_a_few_times_then_fails_the_pod():
    retried = [classify_eviction(500, None, '{"message": "etcd timeout"}', server_errors=n)
               for n in range(eviction.SERVER_ERROR_RETRIES)]
    assert all(o.kind == TRANSIENT for o in retried)
    assert [o.retry_in > 0 for o in retried] == [True] * eviction.SERVER_ERROR_RETRIES
    last = classify_eviction(500, None, '{"message": "etcd timeout"}', server_errors=eviction.SERVER_ERROR_RETRIES)
    assert last.kind == FAILED and "etcd timeout" in last.message


def test_D13_pdb_refusal_retries_every_5s_with_jitter(monkeypatch):
    monkeypatch.setattr(eviction, "PDB_RETRY_SECONDS", 5.0)
    delays = [classify_eviction(429, {}, PDB_STATUS, rng=random.Random(seed)).retry_in for seed in range(30)]
    assert all(4.0 <= d <= 6.0 for d in delays) and len(set(delays)) > 1


def test_D13_retry_after_is_honoured_never_shortened():
    delays = [classify_eviction(429, {"Retry-After": "3"}, "{}").retry_in for dummy in range(30)]
    assert all(3.0 <= d <= 3.6 for d in delays)


# ----------------------------------------------------------------------------------------------------------
# Deadline (D14), deletion (D15), PDB matching, patches
# ----------------------------------------------------------------------------------------------------------

def test_D14_deadline_arithmetic():
    deadline = Deadline(100.0, 900)
    assert deadline.remaining(400.0) == 600.0 and deadline.remaining(2000.0) == 0.0
    assert not deadline.expired(999.9) and deadline.expired(1000.0)
    assert deadline.next_attempt(500.0, 5.0) == 505.0
    assert deadline.next_attempt(998.0, 5.0) == 1000.0   # the last retry lands on the deadline, not after


def test_pdb_wait_is_zero_when_nothing_was_blocked():
    clock = FakeClock()
    tracker = PdbWaitTracker(clock)
    clock.sleep(30)
    tracker.release(("default", "web-0"))   # releasing a pod that was never blocked counts nothing
    assert tracker.seconds() == 0.0


def test_pdb_wait_counts_overlapping_blocked_pods_once():
    clock = FakeClock()
    tracker = PdbWaitTracker(clock)
    tracker.block("web-0")
    clock.sleep(2)
    tracker.block("web-1")     # both blocked from here ...
    clock.sleep(3)
    tracker.block("web-0")     # ... a repeated refusal does not restart web-0's interval
    tracker.release("web-0")
    clock.sleep(5)
    tracker.release("web-1")   # blocked 0-10 in all, not 5 + 8
    assert tracker.seconds() == 10.0
    clock.sleep(20)            # nothing blocked: the clock stands still
    tracker.block("web-2")
    clock.sleep(4)
    tracker.release("web-2")
    assert tracker.seconds() == 14.0


def test_pdb_wait_stops_when_the_blocked_pod_is_evicted_and_runs_while_it_is_not():
    clock = FakeClock()
    tracker = PdbWaitTracker(clock)
    tracker.block("web-0")
    clock.sleep(4)
    assert tracker.seconds() == 4.0   # still blocked: the open interval counts up to now
    tracker.release("web-0")          # eviction accepted
    clock.sleep(60)
    assert tracker.seconds() == 4.0


def test_force_wait_covers_the_longest_grace_period():
    pods = [make_pod("a", grace=10), make_pod("b", grace=120), make_pod("c")]
    assert force_wait_seconds(pods, -1) == 120 + deadlines.FORCE_WAIT_SLACK_SECONDS
    assert force_wait_seconds([make_pod("c")], -1) == drain_pods.DEFAULT_POD_GRACE_SECONDS + deadlines.FORCE_WAIT_SLACK_SECONDS
    assert force_wait_seconds(pods, 0) == deadlines.FORCE_WAIT_SLACK_SECONDS


def test_D15_gone_means_deleted_or_replaced_by_another_uid():
    original = make_pod("web-0", uid="one")
    assert not is_gone(original, {("default", "web-0"): original})
    assert is_gone(original, {})
    assert is_gone(original, {("default", "web-0"): make_pod("web-0", uid="two")})


@pytest.mark.parametrize("selector, labels, expected", [
    ({"matchLabels": {"app": "web"}}, {"app": "web", "x": "1"}, True),
    ({"matchLabels": {"app": "web"}}, {"app": "db"}, False),
    ({}, {"app": "web"}, True),
    (None, {"app": "web"}, False),
    ({"matchExpressions": [{"key": "app", "operator": "In", "values": ["web", "api"]}]}, {"app": "api"}, True),
    ({"matchExpressions": [{"key": "app", "operator": "NotIn", "values": ["web"]}]}, {"app": "web"}, False),
    ({"matchExpressions": [{"key": "tier", "operator": "Exists"}]}, {"app": "web"}, False),
    ({"matchExpressions": [{"key": "tier", "operator": "DoesNotExist"}]}, {"app": "web"}, True),
])
def test_pdb_selector_matching(selector, labels, expected):
    assert selector_matches(selector, labels) is expected


def test_matching_pdbs_names_every_pdb_of_the_pod():
    pdbs = [{"metadata": {"name": n}, "spec": {"selector": {"matchLabels": {"app": a}}}}
            for n, a in (("b-pdb", "web"), ("a-pdb", "web"), ("db-pdb", "db"))]
    assert matching_pdbs(make_pod("w"), pdbs) == ["a-pdb", "b-pdb"]


def node(name="node-a", unschedulable=False, labels=None, annotations=None, taints=None):
    return {"metadata": {"name": name, "uid": "uid-" + name, "labels": dict(labels or {}),
                         "annotations": dict(annotations or {})},
            "spec": {"unschedulable": unschedulable, "taints": taints or []}}


def test_D1_U4_cordon_patch_sets_only_what_is_missing():
    patch = cordon_patch(node(), "run-1", True)
    assert patch == {"spec": {"unschedulable": True},
                     "metadata": {"labels": {EXCLUDE_LB_LABEL: "true"},
                                  "annotations": {CORDONED_BY_ANNOTATION: "run-1"}}}
    assert cordon_patch(node(), "run-1", False) == {
        "spec": {"unschedulable": True},
        "metadata": {"annotations": {CORDONED_BY_ANNOTATION: "run-1; set=unschedulable"}}}
    done = apply_merge_patch(node(), patch)
    assert cordon_patch(done, "run-2", True) is None          # D1: no-op when already set
    assert cordon_patch(node(unschedulable=True, labels={EXCLUDE_LB_LABEL: "true"}), "r", True) is None


def test_uncordon_patch_undoes_only_our_marks():
    ours = apply_merge_patch(node(), cordon_patch(node(), "run-1", True))
    patch = uncordon_patch(ours)
    restored = apply_merge_patch(ours, patch)
    assert restored["spec"].get("unschedulable") is None
    assert EXCLUDE_LB_LABEL not in restored["metadata"]["labels"]
    assert CORDONED_BY_ANNOTATION not in restored["metadata"]["annotations"]
    assert uncordon_patch(ours, run_id="other-run") is None
    # Cordoned and labelled by someone else: uncordon (kubectl parity) but keep their label.
    theirs = node(unschedulable=True, labels={EXCLUDE_LB_LABEL: "true"})
    assert uncordon_patch(theirs) == {"spec": {"unschedulable": None}}
    assert uncordon_patch(node()) is None


def test_C1_autoscaler_taint_refused():
    tainted = node(taints=[{"key": AUTOSCALER_TAINT, "value": "1", "effect": "NoSchedule"}])
    with pytest.raises(UpgradeError) as info:
        check_not_autoscaler_target(tainted)
    assert info.value.code == "ClusterAutoscalerActive" and "node-a" in info.value.msg
    check_not_autoscaler_target(node(taints=[{"key": "other", "effect": "NoSchedule"}]))


@pytest.mark.parametrize("options, parameter", [
    (dict(drain_timeout=0), "drain_timeout"),
    (dict(eviction_concurrency=0), "eviction_concurrency"),
    (dict(eviction_concurrency=101), "eviction_concurrency"),
    (dict(post_drain_wait=-1), "post_drain_wait"),
    (dict(drain_timout=5), "drain_timout"),
])
def test_invalid_options_name_the_parameter(options, parameter):
    with pytest.raises(UpgradeError) as info:
        DrainOptions(**options)
    assert info.value.code == "InvalidParameter" and info.value.details["parameter"] == parameter


def test_options_defaults_are_the_upgrade_defaults():
    options = DrainOptions(pod_selectors=["app=web", "tier=front"])
    assert (options.drain_timeout, options.grace_period, options.ignore_daemonsets, options.delete_emptydir_data,
            options.post_drain_wait, options.force) == (900, -1, True, True, 60, False)
    assert options.pod_selectors == "app=web,tier=front"
    assert options.run_id.startswith("drain-")


# --- Issue 10 item 24: pod_selectors parsed as the API server's labels.Parse, before any change -----------------

@pytest.mark.parametrize("text, labels, expected", [
    ("app=web", {"app": "web"}, True),
    ("app==web", {"app": "db"}, False),
    ("app!=web", {}, True),
    ("app!=web", {"app": "web"}, False),
    ("app in (web, api)", {"app": "api"}, True),
    ("app notin (web,api)", {"app": "db"}, True),
    ("app notin (web)", {}, True),
    ("tier", {"tier": ""}, True),
    ("!tier", {"tier": "x"}, False),
    ("  app = web ,  !canary  ", {"app": "web"}, True),
    ("example.com/tier=front,app", {"example.com/tier": "front", "app": "x"}, True),
    ("in=notin", {"in": "notin"}, True),  # keywords are plain words where a key or a value is read
    ("app in ()", {"app": ""}, True),
    ("app in (,web)", {"app": ""}, True),
    ("app=", {"app": ""}, True),
    ("generation>3", {"generation": "4"}, True),
    ("generation>3", {"generation": "3"}, False),
    ("generation<3", {"generation": "x"}, False),
    ("", {"any": "x"}, True),
])
def test_issue10_item24_label_selector_strings_parse_and_match_as_the_api_server_does(text, labels, expected):
    assert selector_matches(parse_label_selector(text), labels) is expected


@pytest.mark.parametrize("text, says", [
    ("app in ((", "found '(', expected: ',', ')' or identifier"),
    ("app in (web", "found '', expected: ',' or ')'"),
    ("app in web", "expected: '('"),
    ("app=web=x", "found '=', expected: ',' or 'end of string'"),
    ("=web", "expected: !, identifier"),
    (",", "expected: !, identifier"),
    ("app,,tier", "expected: identifier after ','"),
    ("app web", "expected: in, notin, =, ==, !=, >, <"),
    ("!app=web", "found '='"),
    ("app=web tier", "found 'tier'"),
    ("a/b/c=x", "invalid label key 'a/b/c'"),
    ("Example.com/tier=x", "prefix must be a lowercase DNS subdomain"),
    ("-app=x", "invalid label key '-app'"),
    ("app=-web", "invalid label value '-web'"),
    ("app=" + "x" * 64, "invalid label value"),
    ("generation>three", "must be an integer"),
])
def test_issue10_item24_invalid_label_selectors_are_refused_saying_why(text, says):
    with pytest.raises(ValueError) as info:
        parse_label_selector(text)
    assert says in str(info.value)


def test_issue10_item24_drain_options_refuse_an_invalid_pod_selector_naming_pod_selectors():
    with pytest.raises(UpgradeError) as info:
        DrainOptions(pod_selectors=["app=web", "tier in (("])
    assert (info.value.code, info.value.details["parameter"]) == ("InvalidParameter", "pod_selectors")
    assert "app=web,tier in ((" in info.value.msg and "key in (v1,v2)" in info.value.msg
    # Ansible splits a string option on commas: the pieces of one set requirement are joined back before parsing
    assert DrainOptions(pod_selectors=["app in (web", "api)"]).pod_selectors == "app in (web,api)"


def test_verdict_equality():
    assert Verdict(WARN, "x") == Verdict(WARN, "x") and Verdict(WARN, "x") != Verdict(SKIP, "x")


# ----------------------------------------------------------------------------------------------------------
# The scheduler (P4)
# ----------------------------------------------------------------------------------------------------------

class _CountingJob:
    def __init__(self, tracker, retries):
        self.tracker = tracker
        self.retries = retries
        self.drain = None

    def run(self):
        with self.tracker["lock"]:
            self.tracker["now"] += 1
            self.tracker["peak"] = max(self.tracker["peak"], self.tracker["now"])
        time.sleep(0.01)
        with self.tracker["lock"]:
            self.tracker["now"] -= 1
            self.tracker["runs"] += 1
        if self.retries:
            self.retries -= 1
            return time.monotonic() + 0.05
        with self.tracker["lock"]:
            self.tracker["done"] += 1
        return None


def test_P4_scheduler_bounds_requests_in_flight_and_requeues_retries():
    tracker = {"lock": threading.Lock(), "now": 0, "peak": 0, "runs": 0, "done": 0}
    scheduler = EvictionScheduler(3)
    try:
        for dummy in range(20):
            scheduler.submit(_CountingJob(tracker, retries=2))
        deadline = time.monotonic() + 10
        while tracker["done"] < 20 and time.monotonic() < deadline:
            time.sleep(0.02)
    finally:
        scheduler.close()
    assert tracker["done"] == 20 and tracker["runs"] == 60
    assert tracker["peak"] == 3


# ----------------------------------------------------------------------------------------------------------
# The engine on a fake API server
# ----------------------------------------------------------------------------------------------------------

class FakeCluster:
    """CoreV1Api + PolicyV1Api + AppsV1Api stand-in over FakeStores; evictions follow per-pod scripts.

    A script is a list of responses consumed per eviction request: an int status (2xx evicts) or an
    ApiException. When a script runs out the last entry repeats. Evicted pods go away after
    `termination_delay` seconds.
    """

    def __init__(self, pods=(), nodes=None, pdbs=(), daemonsets=("daemonset-1",), termination_delay=0.05):
        self.api_client = self
        self.pods = FakeStore(pods)
        self.nodes = dict((n["metadata"]["name"], n) for n in (nodes or [node("node-a")]))
        self.pdbs = FakeStore(pdbs)
        self.daemonsets = set(daemonsets)
        self.scripts = {}
        self.termination_delay = termination_delay
        self.budget_refill = 0.1
        self.lock = threading.Lock()
        self.requests = []
        self.events = []
        self.in_flight = 0
        self.peak_in_flight = 0

    def _record(self, what):
        with self.lock:
            self.requests.append(what)

    # nodes
    def read_node(self, name, _preload_content=True):
        self._record(("get", "node", name))
        if name not in self.nodes:
            raise api_error(404)
        return FakeResponse(self.nodes[name])

    def patch_node(self, name, body, _content_type=None, _preload_content=True):
        self._record(("patch", "node", name, json.dumps(body, sort_keys=True)))
        assert _content_type == "application/merge-patch+json"
        self.nodes[name] = apply_merge_patch(self.nodes[name], body)
        return FakeResponse(self.nodes[name])

    # pods
    def list_pod_for_all_namespaces(self, **kwargs):
        self._record(("watch" if kwargs.get("watch") else "list", "pods", kwargs.get("field_selector")))
        return self.pods.list_func(**kwargs)

    def create_namespaced_pod_eviction(self, name, namespace, body, _preload_content=True):
        return self._remove("evict", name, namespace, body.delete_options)

    def delete_namespaced_pod(self, name, namespace, body, _preload_content=True):
        return self._remove("delete", name, namespace, body)

    def _remove(self, verb, name, namespace, delete_options):
        with self.lock:
            self.in_flight += 1
            self.peak_in_flight = max(self.peak_in_flight, self.in_flight)
        try:
            time.sleep(0.005)
            self._record((verb, "pod", "%s/%s" % (namespace, name), delete_options.grace_period_seconds))
            key = (namespace, name)
            current = self.pods.objects.get(key)
            if current is None:
                raise api_error(404)
            if delete_options.preconditions.uid != current["metadata"]["uid"]:
                raise api_error(409)
            response = 201
            if verb == "evict":
                response = self._spend_budget(current)
            if verb == "evict" and key in self.scripts:
                script = self.scripts[key]
                response = script.pop(0) if len(script) > 1 else script[0]
            if isinstance(response, Exception):
                raise response
            timer = threading.Timer(self.termination_delay, self.pods.delete, (key,))
            timer.daemon = True
            timer.start()
            return FakeResponse({"kind": "Status", "status": "Success"})
        finally:
            with self.lock:
                self.in_flight -= 1

    def _spend_budget(self, pod):
        """E4 for PDBs that carry a status: spend a disruption, given back `budget_refill` s later."""
        budgets = [p for p in self.pdbs.objects.values() if "status" in p
                   and p["metadata"]["namespace"] == pod["metadata"]["namespace"]
                   and selector_matches(p["spec"]["selector"], pod["metadata"]["labels"])]
        if not budgets:
            return 201
        [pdb] = budgets
        with self.pdbs.cond:
            allowed = pdb["status"]["disruptionsAllowed"]
            if allowed <= 0:
                return pdb_refusal(pdb["metadata"]["name"])
            self.pdbs.put(dict(pdb, status={"disruptionsAllowed": allowed - 1}))
        timer = threading.Timer(self.budget_refill, self._refill, (self.pdbs.key(pdb),))
        timer.daemon = True
        timer.start()
        return 201

    def _refill(self, key):
        with self.pdbs.cond:
            pdb = self.pdbs.objects[key]
            self.pdbs.put(dict(pdb, status={"disruptionsAllowed": pdb["status"]["disruptionsAllowed"] + 1}))

    # events, daemonsets, pdbs
    def create_namespaced_event(self, namespace, body, _preload_content=True):
        self._record(("create", "event", body.involved_object.name))
        self.events.append((namespace, body))
        return FakeResponse({})

    def read_namespaced_daemon_set(self, name, namespace, _preload_content=True):
        self._record(("get", "daemonset", name))
        if name not in self.daemonsets:
            raise api_error(404)
        return FakeResponse({"metadata": {"name": name}})

    def list_namespaced_pod_disruption_budget(self, namespace, **kwargs):
        self._record(("watch" if kwargs.get("watch") else "list", "pdbs", namespace))
        return self.pdbs.list_func(namespace=namespace, **kwargs)

    def verbs(self, verb, kind=None):
        return [r for r in self.requests if r[0] == verb and (kind is None or r[1] == kind)]

    def event_reasons(self):
        return [body.reason for _ns, body in self.events]


@pytest.fixture(autouse=True)
def fast_engine(monkeypatch):
    monkeypatch.setattr(drain_api, "policy_v1", lambda api_client: api_client)
    monkeypatch.setattr(drain_api, "apps_v1", lambda api_client: api_client)
    monkeypatch.setattr(eviction, "PDB_RETRY_SECONDS", 0.05)


def run_drain(cluster, names=("node-a",), **options):
    options.setdefault("run_id", "run-1")
    options.setdefault("post_drain_wait", 0)
    options.setdefault("drain_timeout", 5)
    return drain_nodes(cluster, list(names), options)


def pdb_refusal(name="web-pdb"):
    body = dict(PDB_STATUS)
    body["details"] = {"causes": [{"type": "DisruptionBudget",
                                   "message": "The disruption budget %s needs 3 healthy pods and has 3 currently"
                                              % name}]}
    return api_error(429, body=body)


def test_drain_evicts_waits_and_reports_D1_D11_D16():
    pods = [make_pod("web-%d" % i) for i in range(3)] + [make_pod("agent", owner="DaemonSet"),
                                                         make_pod("static", owner="Node", mirror=True),
                                                         make_pod("other", node="node-b")]
    cluster = FakeCluster(pods)
    result = run_drain(cluster)
    node_result = result.to_dict()["node-a"]
    assert node_result["evicted"] == ["default/web-0", "default/web-1", "default/web-2"]
    assert node_result["skipped"] == [{"pod": "default/agent", "reason": "DaemonSet-managed pod (ignore_daemonsets)"},
                                      {"pod": "default/static", "reason": "mirror pod"}]
    assert node_result["failed"] == [] and node_result["cordoned"] and result.changed
    assert node_result["pdb_wait_seconds"] == 0.0
    assert result.failed_nodes == [] and result.error() is None
    # D1/U4: cordoned, labelled and annotated before anything was listed or evicted
    assert cluster.requests[0] == ("get", "node", "node-a") and cluster.requests[1][:2] == ("patch", "node")
    assert cluster.nodes["node-a"]["spec"]["unschedulable"] is True
    assert cluster.nodes["node-a"]["metadata"]["labels"][EXCLUDE_LB_LABEL] == "true"
    assert cluster.nodes["node-a"]["metadata"]["annotations"][CORDONED_BY_ANNOTATION] == "run-1"
    # D2/P2: one LIST with the node field selector, D15: one WATCH, never per-pod GETs
    assert [r for r in cluster.requests if r[1] == "pods" and r[0] == "list"] == [
        ("list", "pods", "spec.nodeName=node-a")]
    assert len(cluster.verbs("watch", "pods")) == 1
    assert not [r for r in cluster.requests if r[0] == "get" and r[1] == "pod"]
    # D12: grace period not sent by default
    assert all(r[3] is None for r in cluster.verbs("evict"))
    assert cluster.pods.objects.keys() == {("default", "agent"), ("default", "static"), ("default", "other")}
    assert cluster.event_reasons() == ["EksopsCordon", "EksopsDrain"]
    assert result.requests_made == len(cluster.requests)


def test_D12_grace_period_is_sent_when_not_negative():
    cluster = FakeCluster([make_pod("web-0")])
    run_drain(cluster, grace_period=7)
    assert cluster.verbs("evict")[0][3] == 7


def test_D2_pod_selectors_are_sent_as_a_label_selector():
    cluster = FakeCluster([make_pod("web-0"), make_pod("db-0", labels={"app": "db"})])
    result = run_drain(cluster, pod_selectors=["app=web"])
    assert result.to_dict()["node-a"]["evicted"] == ["default/web-0"]
    assert ("default", "db-0") in cluster.pods.objects
    assert cluster.pods.calls[0][1]["label_selector"] == "app=web"


def test_idempotent_rerun_on_an_empty_cordoned_node_changes_nothing():
    cluster = FakeCluster([make_pod("web-0")])
    assert run_drain(cluster).changed
    cluster.requests.clear()
    again = run_drain(cluster)
    assert not again.changed
    assert not cluster.verbs("patch") and not cluster.verbs("evict") and not cluster.verbs("create", "event")


def test_D10_refused_pod_blocks_every_eviction_on_the_node_and_keeps_it_cordoned():
    cluster = FakeCluster([make_pod("web-0"), make_pod("debug", owner=None)])
    result = run_drain(cluster)
    node_result = result.to_dict()["node-a"]
    assert node_result["evicted"] == [] and not cluster.verbs("evict")
    assert node_result["failed"] == [{"pod": "default/debug", "reason": "pod not managed by a controller (use force)",
                                      "pdb": None}]
    assert cluster.nodes["node-a"]["spec"]["unschedulable"] is True
    err = result.error()
    assert err.code == "PodEvictionFailure" and "default/debug" in err.msg and err.details["failed_nodes"] == ["node-a"]
    assert cluster.event_reasons()[-1] == "EksopsDrainFailed"


def test_D8_force_evicts_bare_pods_with_a_warning():
    cluster = FakeCluster([make_pod("debug", owner=None)])
    result = run_drain(cluster, force=True)
    assert result.to_dict()["node-a"]["evicted"] == ["default/debug"]
    assert any("not managed by a controller" in w for w in result.to_dict()["node-a"]["warnings"])


def test_D13_pdb_refusals_are_retried_until_the_budget_allows():
    cluster = FakeCluster([make_pod("web-0"), make_pod("web-1")], termination_delay=1.0)
    cluster.scripts[("default", "web-0")] = [pdb_refusal(), pdb_refusal(), pdb_refusal(), 201]
    started = time.monotonic()
    result = run_drain(cluster)
    elapsed = time.monotonic() - started
    node_result = result.to_dict()["node-a"]
    assert node_result["evicted"] == ["default/web-0", "default/web-1"]
    assert len([r for r in cluster.verbs("evict") if r[2] == "default/web-0"]) == 4
    # three refusals about 0.05 s apart; the clock stops at the accepted eviction, not when the pods are gone
    assert elapsed >= 1.0 and 0.1 <= node_result["pdb_wait_seconds"] <= elapsed - 0.9


def test_D13_D14_pdb_blocked_until_timeout_fails_naming_pod_and_pdb():
    pdb = {"metadata": {"name": "web-pdb", "namespace": "default"},
           "spec": {"selector": {"matchLabels": {"app": "web"}}}}
    cluster = FakeCluster([make_pod("web-0"), make_pod("web-1")], pdbs=[pdb])
    cluster.scripts[("default", "web-0")] = [pdb_refusal()]
    started = time.monotonic()
    result = run_drain(cluster, drain_timeout=1)
    assert 0.9 <= time.monotonic() - started < 4
    node_result = result.to_dict()["node-a"]
    assert node_result["evicted"] == ["default/web-1"]
    [failure] = node_result["failed"]
    assert failure["pod"] == "default/web-0" and failure["pdb"] == "web-pdb"
    assert "drain_timeout=1" in failure["reason"]
    assert 0.7 <= node_result["pdb_wait_seconds"] <= 1.3   # refused from the start until the deadline
    err = result.error()
    assert err.code == "PodEvictionFailure" and "default/web-0" in err.msg and "web-pdb" in err.msg
    assert cluster.nodes["node-a"]["spec"]["unschedulable"] is True
    assert ("default", "web-0") in cluster.pods.objects and not cluster.verbs("delete")


def test_D14_force_deletes_what_remains_after_the_timeout():
    cluster = FakeCluster([make_pod("web-0", grace=1), make_pod("web-1")])
    cluster.scripts[("default", "web-0")] = [pdb_refusal()]
    result = run_drain(cluster, drain_timeout=1, force=True)
    node_result = result.to_dict()["node-a"]
    assert node_result["evicted"] == ["default/web-1"] and node_result["deleted"] == ["default/web-0"]
    assert node_result["failed"] == [] and result.error() is None
    assert ("default", "web-0") not in cluster.pods.objects


def test_D13_a_passing_500_on_an_eviction_does_not_fail_the_drain():
    # Found by the fault soak: one injected 500 failed the scale-down of a whole upgrade.
    cluster = FakeCluster([make_pod("web-0"), make_pod("web-1")])
    cluster.scripts[("default", "web-0")] = [api_error(500, body={"message": "etcd timeout"}), 201]
    result = run_drain(cluster, drain_timeout=30)
    assert result.error() is None
    assert result.to_dict()["node-a"]["evicted"] == ["default/web-0", "default/web-1"]
    assert len([r for r in cluster.verbs("evict") if r[2] == "default/web-0"]) == 2


def test_D13_a_persistent_500_fails_that_pod_before_the_deadline(monkeypatch):
    monkeypatch.setattr(eviction, "SERVER_ERROR_RETRIES", 2)
    cluster = FakeCluster([make_pod("web-0"), make_pod("web-1")])
    cluster.scripts[("default", "web-0")] = [api_error(500, body={"message": "admission webhook timed out"})]
    started = time.monotonic()
    result = run_drain(cluster, drain_timeout=30)
    assert time.monotonic() - started < 10
    node_result = result.to_dict()["node-a"]
    assert node_result["evicted"] == ["default/web-1"]
    assert "admission webhook timed out" in node_result["failed"][0]["reason"]
    assert len([r for r in cluster.verbs("evict") if r[2] == "default/web-0"]) == 3


def test_D13_multiple_pdbs_fail_that_pod_at_once_others_go_on():
    cluster = FakeCluster([make_pod("web-0"), make_pod("web-1")],
                          pdbs=[{"metadata": {"name": n, "namespace": "default"},
                                 "spec": {"selector": {"matchLabels": {"app": "web"}}}} for n in ("pdb-a", "pdb-b")])
    cluster.scripts[("default", "web-0")] = [api_error(500, body={
        "message": "This pod has more than one PodDisruptionBudget, which the eviction subresource does not "
                   "support."})]
    started = time.monotonic()
    result = run_drain(cluster, drain_timeout=30)
    assert time.monotonic() - started < 5        # fails at once, not at the deadline
    node_result = result.to_dict()["node-a"]
    assert node_result["evicted"] == ["default/web-1"]
    assert node_result["failed"][0]["pod"] == "default/web-0"
    assert node_result["failed"][0]["pdb"] == "pdb-a,pdb-b"
    assert "more than one PodDisruptionBudget" in node_result["failed"][0]["reason"]
    assert len([r for r in cluster.verbs("evict") if r[2] == "default/web-0"]) == 1


def test_D13_other_errors_fail_the_pod():
    cluster = FakeCluster([make_pod("web-0"), make_pod("web-1")])
    cluster.scripts[("default", "web-0")] = [api_error(403, body={"message": "forbidden by policy"})]
    result = run_drain(cluster, drain_timeout=30)
    node_result = result.to_dict()["node-a"]
    assert node_result["evicted"] == ["default/web-1"]
    assert "403" in node_result["failed"][0]["reason"] and node_result["failed"][0]["pdb"] is None


def test_D13_throttled_eviction_honours_retry_after():
    cluster = FakeCluster([make_pod("web-0")])
    cluster.scripts[("default", "web-0")] = [api_error(429, body={"message": "slow down"}, retry_after=0.3), 201]
    started = time.monotonic()
    result = run_drain(cluster)
    assert result.to_dict()["node-a"]["evicted"] == ["default/web-0"]
    assert time.monotonic() - started >= 0.3


def test_D11_disable_eviction_deletes():
    cluster = FakeCluster([make_pod("web-0")])
    result = run_drain(cluster, disable_eviction=True)
    assert result.to_dict()["node-a"]["deleted"] == ["default/web-0"] and not cluster.verbs("evict")


def test_D11_uid_precondition_conflict_means_gone():
    cluster = FakeCluster([make_pod("web-0")])
    # Between the LIST and the eviction the pod is replaced by one of the same name.
    original = cluster.pods.objects[("default", "web-0")]
    real_remove = cluster._remove

    def swap_then_remove(verb, name, namespace, options):
        if cluster.pods.objects[(namespace, name)]["metadata"]["uid"] == original["metadata"]["uid"]:
            cluster.pods.put(dict(original, metadata=dict(original["metadata"], uid="new-uid")))
        return real_remove(verb, name, namespace, options)
    cluster._remove = swap_then_remove
    result = run_drain(cluster)
    assert result.error() is None
    # the original's eviction got 409 (gone, not counted as evicted); the newcomer on the node is drained too (Z3)
    assert len(cluster.verbs("evict")) == 2 and result.to_dict()["node-a"]["evicted"] == ["default/web-0"]
    assert ("default", "web-0") not in cluster.pods.objects


def test_D4_terminating_pods_are_waited_for_not_evicted_again():
    terminating = make_pod("old", deleting_for=1)
    cluster = FakeCluster([terminating, make_pod("web-0")])
    threading.Timer(0.3, cluster.pods.delete, (("default", "old"),)).start()
    result = run_drain(cluster)
    assert result.error() is None
    assert [r[2] for r in cluster.verbs("evict")] == ["default/web-0"]


def test_D16_several_nodes_are_cordoned_before_any_drain_and_drained_concurrently():
    nodes = [node("node-a"), node("node-b")]
    cluster = FakeCluster([make_pod("a-%d" % i, node="node-a") for i in range(3)]
                          + [make_pod("b-%d" % i, node="node-b") for i in range(3)], nodes=nodes)
    result = run_drain(cluster, names=("node-a", "node-b"))
    patches = [i for i, r in enumerate(cluster.requests) if r[0] == "patch"]
    first_list = min(i for i, r in enumerate(cluster.requests) if r[1] == "pods")
    assert len(patches) == 2 and max(patches) < first_list
    assert sorted(result.to_dict()) == ["node-a", "node-b"]
    assert all(len(n["evicted"]) == 3 for n in result.to_dict().values())


def test_P4_eviction_concurrency_bounds_requests_in_flight():
    nodes = [node("node-%d" % i) for i in range(4)]
    pods = [make_pod("p-%d-%d" % (n, i), node="node-%d" % n) for n in range(4) for i in range(10)]
    cluster = FakeCluster(pods, nodes=nodes)
    result = run_drain(cluster, names=[n["metadata"]["name"] for n in nodes], eviction_concurrency=3)
    assert sum(len(n["evicted"]) for n in result.to_dict().values()) == 40
    assert 1 < cluster.peak_in_flight <= 3


def test_C1_autoscaler_tainted_node_fails_before_anything_changes():
    nodes = [node("node-a"), node("node-b", taints=[{"key": AUTOSCALER_TAINT, "effect": "NoSchedule"}])]
    cluster = FakeCluster([make_pod("web-0")], nodes=nodes)
    with pytest.raises(UpgradeError) as info:
        run_drain(cluster, names=("node-a", "node-b"))
    assert info.value.code == "ClusterAutoscalerActive" and "node-b" in info.value.msg
    assert not cluster.verbs("patch") and not cluster.verbs("evict")


def test_unknown_node_names_the_parameter():
    with pytest.raises(UpgradeError) as info:
        run_drain(FakeCluster(), names=("nope",))
    assert info.value.code == "ResourceNotFound" and "nope" in info.value.msg


def test_check_mode_plans_without_changing_anything():
    cluster = FakeCluster([make_pod("web-0"), make_pod("agent", owner="DaemonSet")])
    result = run_drain(cluster, check_mode=True)
    node_result = result.to_dict()["node-a"]
    assert node_result["evicted"] == ["default/web-0"] and node_result["cordoned"] and result.changed
    assert not cluster.verbs("patch") and not cluster.verbs("evict") and not cluster.verbs("create")
    assert result.diff()["before"]["node-a"]["unschedulable"] is False
    assert result.diff()["after"]["node-a"]["unschedulable"] is True


def test_check_mode_reports_refusals():
    cluster = FakeCluster([make_pod("web-0"), make_pod("debug", owner=None)])
    result = run_drain(cluster, check_mode=True)
    assert result.to_dict()["node-a"]["failed"][0]["pod"] == "default/debug"
    assert result.error().code == "PodEvictionFailure"
    assert not cluster.verbs("patch") and not cluster.events


def test_U5_post_drain_wait_even_when_nothing_was_evicted():
    """The node may have been cordoned and labelled for load balancers just before (the rolling upgrade cordons
    every old node first); it is terminated right after this, so the wait is owed whether or not pods moved."""
    cluster = FakeCluster([make_pod("web-0")])
    started = time.monotonic()
    run_drain(cluster, post_drain_wait=1)
    assert time.monotonic() - started >= 1
    started = time.monotonic()
    second = run_drain(cluster, post_drain_wait=1)
    assert time.monotonic() - started >= 1
    assert not second.changed


def test_cordon_and_uncordon_are_idempotent():
    cluster = FakeCluster()
    first = cordon_nodes(cluster, ["node-a"], run_id="run-1")
    assert first.changed and first.nodes["node-a"].cordoned
    assert not cordon_nodes(cluster, ["node-a"], run_id="run-2").changed
    assert not uncordon_nodes(cluster, ["node-a"], run_id="run-2").changed     # another run's cordon
    undone = uncordon_nodes(cluster, ["node-a"], run_id="run-1")
    assert undone.changed and not undone.nodes["node-a"].cordoned
    labels = cluster.nodes["node-a"]["metadata"]["labels"]
    assert EXCLUDE_LB_LABEL not in labels
    assert not uncordon_nodes(cluster, ["node-a"]).changed
    assert cluster.event_reasons() == ["EksopsCordon", "EksopsUncordon"]


def test_events_never_fail_the_drain():
    cluster = FakeCluster([make_pod("web-0")])

    def broken(namespace, body, _preload_content=True):
        raise api_error(403)
    cluster.create_namespaced_event = broken
    assert run_drain(cluster).error() is None


def test_api_errors_become_upgrade_errors():
    cluster = FakeCluster([make_pod("web-0")])
    cluster.pods.faults["list"].append(api_error(403))
    with pytest.raises(UpgradeError) as info:
        run_drain(cluster)
    assert info.value.code == "AccessDenied"


def test_events_describe_the_node():
    cluster = FakeCluster([make_pod("web-0")])
    run_drain(cluster)
    namespace, event = cluster.events[0]
    assert namespace == "default" and event.involved_object.kind == "Node"
    assert event.involved_object.uid == "uid-node-a" and event.source.component == "eksops-nodegroup"


def test_D5_orphaned_daemonset_pod_blocks_without_force():
    cluster = FakeCluster([make_pod("agent", owner="DaemonSet")], daemonsets=())
    result = run_drain(cluster)
    assert "is gone" in result.to_dict()["node-a"]["failed"][0]["reason"]
    assert isinstance(api_error(404), ApiException)


# ----------------------------------------------------------------------------------------------------------
# Pacing by the PDBs' status (BudgetGate: P1, P4, S5)
# ----------------------------------------------------------------------------------------------------------

def budget(name="web-pdb", allowed=1, app="web"):
    return {"metadata": {"name": name, "namespace": "default"},
            "spec": {"selector": {"matchLabels": {"app": app}}}, "status": {"disruptionsAllowed": allowed}}


def test_S5_evictions_follow_the_budget_instead_of_collecting_429s(monkeypatch):
    monkeypatch.setattr(eviction, "PDB_RETRY_SECONDS", 5.0)
    cluster = FakeCluster([make_pod("web-%d" % i) for i in range(8)] + [make_pod("db-0", labels={"app": "db"})],
                          pdbs=[budget(allowed=1)])
    started = time.monotonic()
    result = run_drain(cluster, drain_timeout=20)
    assert result.error() is None and len(result.to_dict()["node-a"]["evicted"]) == 9
    # one disruption at a time, released by the PDB watch (0.1 s refills), not by 5 s retries
    assert time.monotonic() - started < 5
    evictions = cluster.verbs("evict")
    assert len(evictions) <= 9 + 1   # at most the first probe is refused
    assert len(cluster.verbs("watch", "pdbs")) >= 1 and len(cluster.verbs("list", "pdbs")) == 1


def test_S5_a_blocked_budget_is_probed_once_per_interval_not_once_per_pod(monkeypatch):
    monkeypatch.setattr(eviction, "PDB_RETRY_SECONDS", 0.2)
    cluster = FakeCluster([make_pod("web-%d" % i) for i in range(6)], pdbs=[budget(allowed=0)])
    result = run_drain(cluster, drain_timeout=1)
    failed = result.to_dict()["node-a"]["failed"]
    assert len(failed) == 6 and all(f["pdb"] == "web-pdb" for f in failed)
    # six pods held by the gate at once for the whole second: counted once, not six times
    assert 0.7 <= result.to_dict()["node-a"]["pdb_wait_seconds"] <= 1.3
    # kubectl would send 6 pods x 5 retries here; we send one per budget per interval
    assert len(cluster.verbs("evict")) <= 1 / 0.2 + 2
    assert "web-pdb" in result.error().msg


def test_S5_budget_gate_falls_back_to_the_server_when_pdbs_cannot_be_watched():
    cluster = FakeCluster([make_pod("web-0"), make_pod("web-1")], pdbs=[budget(allowed=1)])
    cluster.pdbs.faults["list"].append(api_error(403))
    result = run_drain(cluster)
    assert result.error() is None and len(result.to_dict()["node-a"]["evicted"]) == 2


def test_D13_force_deletes_a_pod_whose_eviction_failed_without_waiting_for_the_deadline():
    cluster = FakeCluster([make_pod("web-0", grace=1), make_pod("web-1")])
    cluster.scripts[("default", "web-0")] = [api_error(500, body={
        "message": "This pod has more than one PodDisruptionBudget, which the eviction subresource does not "
                   "support."})]
    started = time.monotonic()
    result = run_drain(cluster, drain_timeout=30, force=True)
    assert time.monotonic() - started < 5
    assert result.error() is None
    assert result.to_dict()["node-a"]["deleted"] == ["default/web-0"]


def test_D4_long_terminating_pods_are_skipped_and_not_waited_for():
    cluster = FakeCluster([make_pod("stuck", deleting_for=600), make_pod("web-0")])
    result = run_drain(cluster, skip_wait_for_delete_timeout=60)
    node_result = result.to_dict()["node-a"]
    assert node_result["skipped"][0]["pod"] == "default/stuck" and result.error() is None
    assert ("default", "stuck") in cluster.pods.objects


class _RestResponse:
    def __init__(self, payload):
        self.status = 200
        self.reason = "OK"
        self.response = FakeResponse(payload)
        self.data = self.response.data
        self.headers = {}

    def read(self):
        return self.data


def test_P5_every_request_asks_the_client_configuration_for_its_token(monkeypatch):
    """Long drains survive token expiry: nothing caches the Authorization header, so the client's
    refresh_api_key_hook (EKS token refresher) runs before every request."""
    from kubernetes.client import ApiClient, Configuration, CoreV1Api

    monkeypatch.undo()  # the real PolicyV1Api/AppsV1Api classes
    tokens = iter("token-%d" % i for i in range(100))
    configuration = Configuration(host="https://eks.invalid")
    configuration.api_key = {"authorization": "token-initial"}
    configuration.api_key_prefix = {"authorization": "Bearer"}

    def refresh(config):
        config.api_key["authorization"] = next(tokens)
    configuration.refresh_api_key_hook = refresh
    client = ApiClient(configuration)
    seen = []

    def request(method, url, headers=None, body=None, post_params=None, _request_timeout=None):
        seen.append((method, headers.get("authorization")))
        return _RestResponse(node() if "/nodes/" in url else {})
    monkeypatch.setattr(client.rest_client, "request", request)
    result = cordon_nodes(CoreV1Api(client), ["node-a"], run_id="run-1")
    assert result.changed and result.requests_made == 3
    assert [auth for _method, auth in seen] == ["Bearer token-0", "Bearer token-1", "Bearer token-2"]


class _BodyAfterHeadersHandler(socketserver.StreamRequestHandler):
    """Keep-alive HTTP/1.1 that answers every request 201 and sends the body a moment after the headers (as
    the sandbox's API server can): a client that hands the connection back unread reuses it too early."""

    def handle(self):
        while True:
            request_line = self.rfile.readline()
            if not request_line:
                return
            length = 0
            for line in iter(self.rfile.readline, b"\r\n"):
                name, _sep, value = line.decode("latin-1").partition(":")
                if name.strip().lower() == "content-length":
                    length = int(value)
            self.rfile.read(length)
            self.server.requests.append(request_line.split()[1].decode())
            body = json.dumps({"kind": "Status", "apiVersion": "v1", "status": "Success", "code": 201}).encode()
            self.wfile.write(b"HTTP/1.1 201 Created\r\nContent-Type: application/json\r\n"
                             b"Content-Length: %d\r\n\r\n" % len(body))
            self.wfile.flush()
            time.sleep(0.1)
            self.wfile.write(body)
            self.wfile.flush()


@pytest.fixture()
def slow_body_server():
    server = socketserver.ThreadingTCPServer(("127.0.0.1", 0), _BodyAfterHeadersHandler)
    server.daemon_threads = True
    server.requests = []
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    yield server
    server.shutdown()
    server.server_close()


def test_D11_eviction_responses_are_read_before_their_connection_is_reused(monkeypatch, slow_body_server):
    """An accepted eviction's response is read to the end before its connection is reused: otherwise the next
    eviction on it reads the leftover body as its status line, fails on our side although the server evicted
    the pod, and is sent again (a 404 that files an evicted pod as merely gone)."""
    from kubernetes.client import ApiClient, Configuration, CoreV1Api

    monkeypatch.undo()  # the real PolicyV1Api/AppsV1Api classes
    configuration = Configuration(host="http://127.0.0.1:%d" % slow_body_server.server_address[1])
    configuration.connection_pool_maxsize = 1
    api = drain_api.KubeApi(CoreV1Api(ApiClient(configuration)))
    pods = [make_pod("web-%d" % i) for i in range(3)]
    for pod in pods:
        api.remove_pod(pod, "evict", -1)
    assert slow_body_server.requests == ["/api/v1/namespaces/default/pods/web-%d/eviction" % i for i in range(3)]
    assert api.requests_made == 3
