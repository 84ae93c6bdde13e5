# -*- coding: utf-8 -*-
# Copyright: Contributors to the eksops.nodegroup project
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Draining nodes end to end through drain_nodes (the facade's composition and _drain/node_drain.py, SPEC D1-D16,
U5, P1): a fake API server plays the cluster. Pods of a workload that come back after each eviction (Z3, issue 10
item 7) are in ../test_returning_pods.py."""

from __future__ import annotations

import threading
import time

import pytest
from kubernetes.client.exceptions import ApiException

from ansible_collections.eksops.nodegroup.plugins.module_utils._drain.cordon import EXCLUDE_LB_LABEL
from ansible_collections.eksops.nodegroup.plugins.module_utils.errors import UpgradeError
from ansible_collections.eksops.nodegroup.plugins.module_utils.nodegroup.journal import CORDONED_BY_ANNOTATION

from ...fakes import FakeCluster, api_error, ec2_node, make_pod, node, pdb_refusal, run_drain


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


def test_on_emptied_is_called_once_when_every_node_is_empty_before_their_post_drain_waits():
    """Issue 11 item 4: node_replace reads what the next batch needs during the post-drain wait."""
    cluster = FakeCluster([make_pod("web-0"), make_pod("web-1", node="node-b")], nodes=[node("node-a"), node("node-b")])
    calls = []

    def emptied():
        calls.append((time.monotonic(), sorted(p["metadata"]["name"] for p in cluster.pods.objects.values())))

    run_drain(cluster, names=("node-a", "node-b"), post_drain_wait=1, on_emptied=emptied)
    ended = time.monotonic()
    assert len(calls) == 1 and calls[0][1] == [], "once, with every pod gone"
    assert ended - calls[0][0] >= 1, "before the post-drain wait"
    # Not when a node fails, nor in check mode: nothing is waited for then.
    calls.clear()
    refused = FakeCluster([make_pod("web-0"), make_pod("bare", owner=None, node="node-b")],
                          nodes=[node("node-a"), node("node-b")])
    run_drain(refused, names=("node-a", "node-b"), on_emptied=emptied)
    run_drain(FakeCluster([make_pod("web-0")]), check_mode=True, on_emptied=emptied)
    assert calls == []


class TargetGroupHolding:
    """Target group ``web`` holds instance i-1 until ``seconds`` after the drain starts (None: for ever)."""

    found = True
    unreadable = {}

    def __init__(self, seconds):
        self.until = None if seconds is None else time.monotonic() + seconds

    def describe(self):
        return "1 target group(s)"

    def holding(self, instance_ids):
        if self.until is not None and time.monotonic() >= self.until:
            return {}
        return {"i-1": [dict(kind="target group", name="web", state="draining", delay_seconds=20)]}


def test_B3_the_node_waits_for_its_load_balancers_not_for_post_drain_wait():
    cluster = FakeCluster([make_pod("web-0")], nodes=[ec2_node("node-a", "i-1")])
    started = time.monotonic()
    result = run_drain(cluster, post_drain_wait=30, load_balancers=TargetGroupHolding(1.0))
    took = time.monotonic() - started
    assert 1.0 <= took < 5, took
    node = result.to_dict()["node-a"]
    assert result.error() is None and node["load_balancers"] == ["web"] and node["post_drain_waited_seconds"] >= 1


def test_B3_a_node_its_load_balancer_still_holds_stays_cordoned_with_the_code():
    cluster = FakeCluster([make_pod("web-0")], nodes=[ec2_node("node-a", "i-1")])
    result = run_drain(cluster, post_drain_wait=1, load_balancers=TargetGroupHolding(None))
    error = result.error()
    assert error.code == "LoadBalancerDeregistrationTimeout" and error.details["failed_nodes"] == ["node-a"]
    assert "target group web (draining, deregistration delay 20 s) after post_drain_wait=1 s" in error.msg
    assert cluster.nodes["node-a"]["spec"]["unschedulable"] is True
    assert cluster.event_reasons()[-1] == "EksopsDrainFailed"


def test_api_errors_become_upgrade_errors():
    cluster = FakeCluster([make_pod("web-0")])
    cluster.pods.faults["list"].append(api_error(403))
    with pytest.raises(UpgradeError) as info:
        run_drain(cluster)
    assert info.value.code == "AccessDenied"


def test_D5_orphaned_daemonset_pod_blocks_without_force():
    cluster = FakeCluster([make_pod("agent", owner="DaemonSet")], daemonsets=())
    result = run_drain(cluster)
    assert "is gone" in result.to_dict()["node-a"]["failed"][0]["reason"]
    assert isinstance(api_error(404), ApiException)


# ----------------------------------------------------------------------------------------------------------
# Each eviction answer, end to end (D11, D13, D14; what an answer means: test_eviction.py)
# ----------------------------------------------------------------------------------------------------------

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
    # 2 s, not 1: on a loaded machine (make test beside other work) web-1's eviction once outlasted a 1 s timeout.
    result = run_drain(cluster, drain_timeout=2)
    assert 1.9 <= time.monotonic() - started < 5
    node_result = result.to_dict()["node-a"]
    assert node_result["evicted"] == ["default/web-1"]
    [failure] = node_result["failed"]
    assert failure["pod"] == "default/web-0" and failure["pdb"] == "web-pdb"
    assert "drain_timeout=2" in failure["reason"]
    assert 1.7 <= node_result["pdb_wait_seconds"] <= 2.3   # refused from the start until the deadline
    err = result.error()
    assert err.code == "PodEvictionFailure" and "default/web-0" in err.msg and "web-pdb" in err.msg
    assert cluster.nodes["node-a"]["spec"]["unschedulable"] is True
    assert ("default", "web-0") in cluster.pods.objects and not cluster.verbs("delete")
    # Issue 27 item 5: the one failure undrainable_nodes quarantine holds a node for.
    assert result.nodes["node-a"].timed_out is True


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


def test_D13_a_persistent_500_fails_that_pod_before_the_deadline():
    cluster = FakeCluster([make_pod("web-0"), make_pod("web-1")])
    cluster.scripts[("default", "web-0")] = [api_error(500, body={"message": "admission webhook timed out"})]
    started = time.monotonic()
    result = run_drain(cluster, drain_timeout=30, server_error_retries=2)
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


def test_D4_long_terminating_pods_are_skipped_and_not_waited_for():
    cluster = FakeCluster([make_pod("stuck", deleting_for=600), make_pod("web-0")])
    result = run_drain(cluster, skip_wait_for_delete_timeout=60)
    node_result = result.to_dict()["node-a"]
    assert node_result["skipped"][0]["pod"] == "default/stuck" and result.error() is None
    assert ("default", "stuck") in cluster.pods.objects


# ----------------------------------------------------------------------------------------------------------
# Pods landing on the cordoned node during the drain (U5, D5, D8, D10, D14, P1)
# ----------------------------------------------------------------------------------------------------------

def later(seconds, fn, *args):
    timer = threading.Timer(seconds, fn, args)
    timer.daemon = True
    timer.start()
    return timer


def test_U5_a_pod_that_lands_during_the_wait_for_deletion_is_evicted_too():
    cluster = FakeCluster([make_pod("web-0")], termination_delay=0.6)
    later(0.2, cluster.pods.put, make_pod("job-7", owner="Job"))
    result = run_drain(cluster)
    assert result.error() is None
    assert result.to_dict()["node-a"]["evicted"] == ["default/job-7", "default/web-0"]
    assert not [k for k in cluster.pods.objects if k[1] in ("web-0", "job-7")]


def test_D8_D10_a_bare_pod_bound_to_the_node_mid_drain_fails_the_node_naming_it():
    cluster = FakeCluster([make_pod("web-0")], termination_delay=0.6)
    bound = make_pod("debug", owner=None)   # spec.nodeName set by its creator: no scheduler involved
    later(0.2, cluster.pods.put, bound)
    result = run_drain(cluster, drain_timeout=30)
    err = result.error()
    assert err is not None and err.code == "PodEvictionFailure"
    failed = dict((f["pod"], f["reason"]) for f in result.to_dict()["node-a"]["failed"])
    assert failed.pop("default/debug") == "pod not managed by a controller (use force); it arrived during the drain"
    # the drain stops at the refusal (D10): the pod still stopping is reported as such
    assert failed == {"default/web-0": "still terminating when a pod that arrived was refused"}
    # Issue 27 item 5: refused before drain_timeout ran out, the node is not quarantined.
    assert result.nodes["node-a"].timed_out is False
    assert "default/debug" in err.msg
    assert [r[2] for r in cluster.verbs("evict")] == ["default/web-0"]
    assert ("default", "debug") in cluster.pods.objects


def test_D8_with_force_a_bare_pod_bound_mid_drain_is_evicted_with_a_warning():
    cluster = FakeCluster([make_pod("web-0")], termination_delay=0.6)
    later(0.2, cluster.pods.put, make_pod("debug", owner=None))
    result = run_drain(cluster, force=True)
    assert result.error() is None
    node_result = result.to_dict()["node-a"]
    assert "default/debug" in node_result["evicted"]
    assert any(w.startswith("default/debug: pod not managed") for w in node_result["warnings"])


def test_U5_a_pod_that_lands_during_post_drain_wait_is_evicted_and_the_wait_starts_over():
    cluster = FakeCluster([make_pod("web-0")])
    later(0.5, cluster.pods.put, make_pod("web-late"))
    started = time.monotonic()
    result = run_drain(cluster, post_drain_wait=1)
    assert time.monotonic() - started >= 1.5
    assert result.error() is None
    assert result.to_dict()["node-a"]["evicted"] == ["default/web-0", "default/web-late"]
    assert ("default", "web-late") not in cluster.pods.objects


def test_P1_post_drain_wait_watches_from_the_first_list_without_listing_again():
    cluster = FakeCluster([make_pod("web-0"), make_pod("agent", owner="DaemonSet")])
    result = run_drain(cluster, post_drain_wait=1)
    assert result.error() is None
    assert len(cluster.verbs("list", "pods")) == 1 and len(cluster.verbs("watch", "pods")) == 2
    # both watches start from the LIST's resourceVersion: the second replays what the first saw
    versions = [kwargs.get("resource_version") for kind, kwargs in cluster.pods.calls if kind == "watch"]
    assert versions[0] and versions == [versions[0]] * 2


def test_D5_a_daemonset_pod_landing_late_is_skipped_and_does_not_block():
    cluster = FakeCluster([make_pod("web-0")], termination_delay=0.5)
    later(0.2, cluster.pods.put, make_pod("agent", owner="DaemonSet"))
    result = run_drain(cluster)
    assert result.error() is None
    node_result = result.to_dict()["node-a"]
    assert node_result["evicted"] == ["default/web-0"]
    assert node_result["skipped"] == [{"pod": "default/agent", "reason": "DaemonSet-managed pod (ignore_daemonsets)"}]


def test_D14_a_pod_landing_after_the_deadline_during_post_drain_wait_fails_the_node():
    cluster = FakeCluster([make_pod("web-0")])
    later(1.3, cluster.pods.put, make_pod("web-late"))
    result = run_drain(cluster, drain_timeout=1, post_drain_wait=2)
    assert result.error().code == "PodEvictionFailure"
    assert [f["pod"] for f in result.to_dict()["node-a"]["failed"]] == ["default/web-late"]
    assert ("default", "web-late") in cluster.pods.objects
