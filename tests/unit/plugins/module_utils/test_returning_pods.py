# -*- coding: utf-8 -*-
# Copyright: Contributors to the eksops.nodegroup project
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Workloads whose pods come back to the node being drained (SPEC Z3, D14; issue 10 item 7 "Eviction storm"):
the pure detection, then the drain engine on a fake API where every eviction brings a replacement back."""

from __future__ import annotations

import itertools
import json
import random
import threading
import time

import pytest

from ansible_collections.eksops.nodegroup.plugins.module_utils._drain.cordon import (
    LEFT_PODS_ANNOTATION,
    left_pods_mark,
    uncordon_patch,
)
from ansible_collections.eksops.nodegroup.plugins.module_utils.kube.watch import BACKOFF_BASE_SECONDS
from ansible_collections.eksops.nodegroup.plugins.module_utils._drain.drained import termination_problem
from ansible_collections.eksops.nodegroup.plugins.module_utils.members.returning_pods import (
    BOUND,
    PINNED,
    RETURNS_WITHOUT_CAUSE,
    TOLERATES_ALL,
    TOLERATES_CORDON,
    ReturnTracker,
    pinned_to_node,
    return_cause,
    tolerates_cordon,
    tolerates_every_taint,
    workload_of,
    workload_ref,
)

from ..fakes import FakeCluster, make_pod, node, run_drain


TOLERATE_ALL = [{"operator": "Exists"}]
POD_HASH = "5d8f9c7b6"


def replica(name, deployment="everywhere", tolerations=None, node_name="node-a", uid=None, **spec):
    """A pod of Deployment ``deployment`` (through its ReplicaSet ``<deployment>-<pod-template-hash>``)."""
    pod = make_pod(name, node=node_name, labels={"app": deployment, "pod-template-hash": POD_HASH}, uid=uid, grace=0)
    pod["metadata"]["ownerReferences"] = [{"kind": "ReplicaSet", "name": "%s-%s" % (deployment, POD_HASH),
                                           "controller": True, "apiVersion": "apps/v1", "uid": "rs-" + deployment}]
    if tolerations is not None:
        pod["spec"]["tolerations"] = tolerations
    pod["spec"].update(spec)
    return pod


def drained_node(name="node-a", hostname=None):
    return node(name, unschedulable=True, labels={"kubernetes.io/hostname": hostname or name})


# ----------------------------------------------------------------------------------------------------------
# Pure detection
# ----------------------------------------------------------------------------------------------------------

def test_item7_workload_of_names_the_deployment_behind_its_replicaset():
    assert workload_of(replica("everywhere-5d8f9c7b6-abcde")) == ("Deployment", "default", "everywhere")
    assert workload_ref(("Deployment", "default", "everywhere")) == "Deployment default/everywhere"
    # a ReplicaSet of its own (no pod-template-hash, or a name that does not end with it) stays a ReplicaSet
    assert workload_of(make_pod("web-0")) == ("ReplicaSet", "default", "replicaset-1")
    stray = replica("x")
    stray["metadata"]["ownerReferences"][0]["name"] = "handmade"
    assert workload_of(stray) == ("ReplicaSet", "default", "handmade")
    assert workload_of(make_pod("db-0", owner="StatefulSet")) == ("StatefulSet", "default", "statefulset-1")
    assert workload_of(make_pod("bare", owner=None)) is None


@pytest.mark.parametrize("tolerations, every, cordon", [
    ([{"operator": "Exists"}], True, True),
    ([{"operator": "Exists", "effect": "NoSchedule"}], False, True),
    ([{"operator": "Exists", "effect": "NoExecute"}], False, False),
    ([{"key": "node.kubernetes.io/unschedulable", "operator": "Exists", "effect": "NoSchedule"}], False, True),
    ([{"key": "node.kubernetes.io/unschedulable", "operator": "Exists"}], False, True),
    ([{"key": "dedicated", "operator": "Equal", "value": "gpu", "effect": "NoSchedule"}], False, False),
    ([{"key": "node.kubernetes.io/not-ready", "operator": "Exists", "effect": "NoExecute",
       "tolerationSeconds": 300}], False, False),   # what every pod gets by default
    (None, False, False),
])
def test_item7_which_tolerations_let_a_pod_back_onto_a_cordoned_node(tolerations, every, cordon):
    pod = replica("p", tolerations=tolerations)
    assert tolerates_every_taint(pod) is every
    assert tolerates_cordon(pod) is cordon


def daemonset_like_affinity(node_name):
    """What the DaemonSet controller writes into each of its pods."""
    return {"nodeAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": {"nodeSelectorTerms": [
        {"matchFields": [{"key": "metadata.name", "operator": "In", "values": [node_name]}]}]}}}


@pytest.mark.parametrize("spec, pinned", [
    ({"affinity": daemonset_like_affinity("node-a")}, True),
    ({"affinity": daemonset_like_affinity("node-b")}, False),
    ({"nodeSelector": {"kubernetes.io/hostname": "ip-10-0-0-4"}}, True),
    ({"nodeSelector": {"kubernetes.io/hostname": "ip-10-0-9-9"}}, False),
    ({"affinity": {"nodeAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": {"nodeSelectorTerms": [
        {"matchExpressions": [{"key": "kubernetes.io/hostname", "operator": "In", "values": ["ip-10-0-0-4"]}]},
        {"matchExpressions": [{"key": "pool", "operator": "In", "values": ["solo"]}]}]}}}}, False),  # or-ed terms
    ({"nodeSelector": {"pool": "solo"}}, False),
    ({}, False),
])
def test_item7_pods_pinned_to_the_node_as_a_daemonset_pins_them(spec, pinned):
    assert pinned_to_node(replica("p", **spec), drained_node("node-a", hostname="ip-10-0-0-4")) is pinned


def test_item7_return_cause_prefers_what_the_pod_spec_shows():
    target = drained_node()
    assert return_cause(replica("a", tolerations=TOLERATE_ALL), target) == TOLERATES_ALL
    assert return_cause(replica("b", tolerations=[{"key": "node.kubernetes.io/unschedulable",
                                                   "operator": "Exists"}]), target) == TOLERATES_CORDON
    assert return_cause(replica("c", affinity=daemonset_like_affinity("node-a")), target) == PINNED
    assert return_cause(replica("d"), target) == BOUND


def test_item7_a_tolerate_all_replacement_of_an_evicted_pod_flags_its_deployment_at_once():
    tracker = ReturnTracker(drained_node())
    original = replica("everywhere-0", tolerations=TOLERATE_ALL)
    # a newcomer of a workload this drain removed nothing of is an ordinary newcomer
    assert tracker.arrived(replica("everywhere-1", tolerations=TOLERATE_ALL)) is None
    tracker.sending(original)
    tracker.sent(original, accepted=True)
    returning = tracker.arrived(replica("everywhere-2", tolerations=TOLERATE_ALL))
    assert returning is not None and returning.cause == TOLERATES_ALL
    assert returning.describe() == ("Deployment default/everywhere: its pods tolerate every taint and are scheduled "
                                    "back onto the cordoned node (1 of its pod(s) removed from this node, 1 came back)")
    assert tracker.flagged(replica("everywhere-9")) is returning
    # another workload on the node is not concerned
    assert tracker.flagged(replica("web-0", deployment="web")) is None
    assert tracker.arrived(replica("web-1", deployment="web", tolerations=TOLERATE_ALL)) is None
    # later returns are counted on the same record
    assert tracker.arrived(replica("everywhere-3", tolerations=TOLERATE_ALL)) is returning
    assert returning.to_dict() == dict(workload="Deployment default/everywhere", cause=TOLERATES_ALL, removed=1,
                                       returned=2, pods=[], reason=returning.why)


def test_item7_a_replacement_seen_before_the_eviction_answer_counts():
    tracker = ReturnTracker(drained_node())
    tracker.sending(replica("everywhere-0", tolerations=TOLERATE_ALL))   # the answer is not back yet
    assert tracker.arrived(replica("everywhere-1", tolerations=TOLERATE_ALL)) is not None


def test_item7_a_refused_eviction_is_not_a_removal():
    tracker = ReturnTracker(drained_node())
    original = replica("everywhere-0", tolerations=TOLERATE_ALL)
    tracker.sending(original)
    tracker.sent(original, accepted=False)   # 429 from its PDB: nothing was replaced
    assert tracker.arrived(replica("everywhere-1", tolerations=TOLERATE_ALL)) is None


def test_item7_a_return_without_a_cause_is_evicted_again_after_a_backoff_and_the_next_one_flags():
    tracker = ReturnTracker(drained_node(), rng=random.Random(7))
    original = replica("bound-0")
    tracker.sending(original)
    tracker.sent(original, accepted=True)
    first = replica("bound-1")
    assert tracker.arrived(first) is None
    delay = tracker.take_delay(first)
    assert 0.25 <= delay <= 0.5   # kube_watch.backoff_delay(0): jittered, not a second helper
    assert tracker.take_delay(first) == 0.0   # once
    assert RETURNS_WITHOUT_CAUSE == 2
    returning = tracker.arrived(replica("bound-2"))
    assert returning is not None and returning.cause == BOUND
    assert "bound to this node by spec.nodeName" in returning.why


@pytest.mark.parametrize("newcomer", [
    make_pod("agent", owner="DaemonSet"),                 # DaemonSet pods belong to the node (D5)
    make_pod("bare", owner=None),                         # no controller: the unreplicated filter decides (D8)
    make_pod("leaving", deleting_for=1),                  # already terminating: leaving anyway
    make_pod("done", phase="Succeeded"),
])
def test_item7_only_running_pods_of_a_controller_can_return(newcomer):
    tracker = ReturnTracker(drained_node())
    for pod in (make_pod("agent-0", owner="DaemonSet"), make_pod("web-0")):
        tracker.sending(pod)
        tracker.sent(pod, accepted=True)
    newcomer["spec"]["tolerations"] = TOLERATE_ALL
    assert tracker.arrived(newcomer) is None


def test_item7_the_tracker_is_safe_from_several_threads():
    tracker = ReturnTracker(drained_node())

    def evict(i):
        pod = replica("everywhere-%d" % i, tolerations=TOLERATE_ALL)
        tracker.sending(pod)
        tracker.sent(pod, accepted=True)

    threads = [threading.Thread(target=evict, args=(i,)) for i in range(20)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert tracker.arrived(replica("everywhere-new", tolerations=TOLERATE_ALL)).removed == 20


# ----------------------------------------------------------------------------------------------------------
# The check before a termination (U5) and the uncordon, for what a forced drain left
# ----------------------------------------------------------------------------------------------------------

def left_node(run_id="run-1", workloads=("Deployment default/everywhere",)):
    result = node("node-a", unschedulable=True, annotations={
        LEFT_PODS_ANNOTATION: json.dumps(dict(run_id=run_id, workloads=list(workloads)))})
    return result


def test_item7_U5_pods_a_forced_drain_left_go_with_the_node_and_no_others():
    pods = [replica("everywhere-1", tolerations=TOLERATE_ALL), make_pod("agent", owner="DaemonSet")]
    assert termination_problem("i-1", left_node(), pods) is None
    # without the mark, or for another workload, they still block the termination
    assert termination_problem("i-1", node("node-a", unschedulable=True), pods)["pods"] == ["default/everywhere-1"]
    other = replica("web-1", deployment="web", tolerations=TOLERATE_ALL)
    assert termination_problem("i-1", left_node(), pods + [other])["pods"] == ["default/web-1"]
    garbled = node("node-a", unschedulable=True, annotations={LEFT_PODS_ANNOTATION: "{not json"})
    assert left_pods_mark(garbled) is None and termination_problem("i-1", garbled, pods) is not None


def test_item7_uncordon_removes_the_left_pods_mark_of_its_run_only():
    target = left_node(run_id="run-1")
    target["metadata"]["annotations"]["eksops.nodegroup/cordoned-by"] = "run-1"
    patch = uncordon_patch(target, "run-1")
    assert patch["metadata"]["annotations"] == {"eksops.nodegroup/cordoned-by": None, LEFT_PODS_ANNOTATION: None}
    assert uncordon_patch(left_node(run_id="run-1"), "run-2") is None
    assert uncordon_patch(left_node(run_id="run-1"), None)["metadata"]["annotations"] == {LEFT_PODS_ANNOTATION: None}


# ----------------------------------------------------------------------------------------------------------
# The drain engine: every eviction brings a replacement back onto the node
# ----------------------------------------------------------------------------------------------------------

class ComebackCluster(FakeCluster):
    """Each accepted removal of a pod of Deployment ``everywhere`` brings a replacement (same spec, new name
    and uid) onto the same node ``respawn_delay`` s later, before the removed pod is gone, as a ReplicaSet
    replaces a terminating pod at once and the scheduler puts a pod that tolerates the cordon back."""

    def __init__(self, pods, respawn_delay=0.05, **kwargs):
        kwargs.setdefault("termination_delay", 0.3)
        super(ComebackCluster, self).__init__(pods, **kwargs)
        self.respawn_delay = respawn_delay
        self.generation = itertools.count(1)
        self.respawned = []
        self.removal_times = []

    def _remove(self, verb, name, namespace, delete_options):
        original = self.pods.objects.get((namespace, name))
        response = super(ComebackCluster, self)._remove(verb, name, namespace, delete_options)
        if original is not None and name.startswith("everywhere"):
            self.removal_times.append(time.monotonic())
            generation = next(self.generation)
            replacement = json.loads(json.dumps(original))
            replacement["metadata"].update(name="everywhere-r%d" % generation, uid="uid-r%d" % generation)
            replacement["metadata"].pop("resourceVersion", None)
            self.respawned.append("default/" + replacement["metadata"]["name"])
            timer = threading.Timer(self.respawn_delay, self.pods.put, (replacement,))
            timer.daemon = True
            timer.start()
        return response


def storm_pods(count=3):
    return [replica("everywhere-%d" % i, tolerations=TOLERATE_ALL) for i in range(count)] + \
        [replica("web-0", deployment="web"), make_pod("agent", owner="DaemonSet")]


def test_item7_Z3_without_force_the_node_fails_fast_naming_the_deployment_and_why():
    """issue 10 item 7: the returning tolerate-all Deployment is not evicted again; the node fails at once with
    PodEvictionFailure, long before drain_timeout, and stays cordoned."""
    cluster = ComebackCluster(storm_pods())
    started = time.monotonic()
    result = run_drain(cluster, drain_timeout=30, post_drain_wait=1)
    elapsed = time.monotonic() - started
    assert elapsed < 3, elapsed   # fast: not the 30 s deadline
    err = result.error()
    assert err is not None and err.code == "PodEvictionFailure"
    assert "Deployment default/everywhere: its pods tolerate every taint and are scheduled back onto the " \
           "cordoned node" in err.msg
    assert "stopped evicting it" in err.msg and "force" in err.msg
    node_result = result.to_dict()["node-a"]
    # the three originals were evicted once each; no replacement was evicted
    evicted_everywhere = [p for p in node_result["evicted"] if p.startswith("default/everywhere-")]
    assert sorted(evicted_everywhere) == ["default/everywhere-0", "default/everywhere-1", "default/everywhere-2"]
    assert len(cluster.verbs("evict")) <= 4 and not cluster.verbs("delete")
    [returning] = node_result["returning_workloads"]
    assert returning["workload"] == "Deployment default/everywhere" and returning["cause"] == TOLERATES_ALL
    assert returning["pods"] and all(p in cluster.respawned for p in returning["pods"])
    failed = dict((f["pod"], f["reason"]) for f in node_result["failed"])
    expected = "Deployment default/everywhere came back to the cordoned node; not evicted again"
    assert failed[returning["pods"][0]] == expected
    # Issue 27 item 5: a fail-fast, not a drain that ran out of time: undrainable_nodes quarantine does not hold it.
    assert result.nodes["node-a"].timed_out is False
    assert cluster.nodes["node-a"]["spec"]["unschedulable"] is True
    assert LEFT_PODS_ANNOTATION not in cluster.nodes["node-a"]["metadata"].get("annotations", {})
    assert "EksopsDrainFailed" in cluster.event_reasons()


def test_item7_Z3_with_force_the_returning_pods_are_left_and_reported_and_the_drain_finishes():
    """issue 10 item 7: with force the tolerate-all Deployment is not evicted in a loop either: its pods are left
    to go with the node, reported in the result, and the check before the node's termination lets them go."""
    cluster = ComebackCluster(storm_pods())
    started = time.monotonic()
    result = run_drain(cluster, drain_timeout=30, post_drain_wait=1, force=True)
    elapsed = time.monotonic() - started
    assert result.error() is None, result.error()
    assert elapsed < 5, elapsed
    node_result = result.to_dict()["node-a"]
    assert "default/web-0" in node_result["evicted"]
    assert len(cluster.verbs("evict")) <= 4 and not cluster.verbs("delete")
    [returning] = node_result["returning_workloads"]
    assert returning["workload"] == "Deployment default/everywhere" and returning["removed"] == 3
    left = [p for p in cluster.pods.objects if p[1].startswith("everywhere-")]
    assert sorted("%s/%s" % key for key in left) == sorted(returning["pods"])
    skipped = dict((e["pod"], e["reason"]) for e in node_result["skipped"])
    assert all(skipped[p].endswith("left on the node to go with it (force)") for p in returning["pods"])
    assert any(w.startswith("Deployment default/everywhere: its pods tolerate every taint") for w in node_result["warnings"])
    mark = left_pods_mark(cluster.nodes["node-a"])
    assert mark == ("run-1", frozenset(["Deployment default/everywhere"]))
    pods_left = [cluster.pods.objects[key] for key in left] + [cluster.pods.objects[("default", "agent")]]
    assert termination_problem("i-a", cluster.nodes["node-a"], pods_left) is None


def test_item7_Z3_a_workload_that_is_not_evicted_yet_when_flagged_is_not_evicted_at_all():
    """issue 10 item 7: once flagged, the queued evictions of the workload's other pods are dropped."""
    cluster = ComebackCluster(storm_pods(count=6), respawn_delay=0.01)
    result = run_drain(cluster, drain_timeout=30, force=True, eviction_concurrency=1)
    assert result.error() is None
    evicted = [r[2] for r in cluster.verbs("evict") if r[2].startswith("default/everywhere-")]
    assert len(evicted) < 6
    [returning] = result.to_dict()["node-a"]["returning_workloads"]
    assert len(returning["pods"]) >= 6 - len(evicted)


def test_item7_a_return_without_a_cause_backs_off_then_fails_the_node():
    """issue 10 item 7: pods bound to the node by their controller (spec.nodeName, nothing in the spec says so):
    the first one that comes back is evicted after a backoff, the second flags the workload."""
    cluster = ComebackCluster([replica("everywhere-0")])
    result = run_drain(cluster, drain_timeout=30)
    err = result.error()
    assert err is not None and err.code == "PodEvictionFailure"
    assert "bound to this node by spec.nodeName" in err.msg
    assert len(cluster.removal_times) == 2
    # the first backoff (kube_watch.backoff_delay(0)) is at least half its 0.5 s ceiling
    assert cluster.removal_times[1] - cluster.removal_times[0] >= BACKOFF_BASE_SECONDS / 2
    [returning] = result.to_dict()["node-a"]["returning_workloads"]
    assert returning["cause"] == BOUND and returning["returned"] == 2
