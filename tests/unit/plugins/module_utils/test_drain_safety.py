# -*- coding: utf-8 -*-
# Copyright: Contributors to the eksops.nodegroup project
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Nothing is lost with a node (SPEC U5, D1, D14-D16, Z3): pods that land on a node while it is drained, the
check before an instance is terminated, and a cordon that undoes only what it did."""

from __future__ import annotations

import os
import sys
import threading
import time

import pytest

from ansible_collections.eksops.nodegroup.plugins.module_utils._drain.api import KubeApi
from ansible_collections.eksops.nodegroup.plugins.module_utils._drain.cordon import (
    EXCLUDE_LB_LABEL,
    apply_merge_patch,
    cordon_mark,
    cordon_patch,
    parse_cordon_mark,
    uncordon_patch,
)
from ansible_collections.eksops.nodegroup.plugins.module_utils.journal import CORDONED_BY_ANNOTATION
from ansible_collections.eksops.nodegroup.plugins.module_utils.nodes import (
    nodes_of_instances,
    pod_outlives_node,
    termination_check,
    termination_problem,
    termination_problems_message,
    undrained_instances,
)

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
# fast_engine is a fixture: importing it is what makes it apply here.
# pylint: disable-next=unused-import
from test_drain import FakeCluster, fast_engine, make_pod, node, run_drain  # noqa: E402,F401
from test_kube_watch import FakeResponse  # noqa: E402


def later(seconds, fn, *args):
    timer = threading.Timer(seconds, fn, args)
    timer.daemon = True
    timer.start()
    return timer


# ----------------------------------------------------------------------------------------------------------
# Pods landing on the cordoned node during the drain
# ----------------------------------------------------------------------------------------------------------

# Pods of a workload that come back after each eviction (Z3, issue 10 item 7) are in test_returning_pods.py.


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


# ----------------------------------------------------------------------------------------------------------
# Before terminating an instance (U5)
# ----------------------------------------------------------------------------------------------------------

@pytest.mark.parametrize("pod, outlives", [
    (make_pod("web"), True),
    (make_pod("bare", owner=None), True),
    (make_pod("leaving", deleting_for=5), True),        # still terminating: still on the node
    (make_pod("agent", owner="DaemonSet"), False),
    (make_pod("static", owner="Node", mirror=True), False),
    (make_pod("done", phase="Succeeded"), False),
    (make_pod("crashed", owner=None, phase="Failed"), False),
])
def test_U5_which_pods_a_termination_would_lose(pod, outlives):
    assert pod_outlives_node(pod) is outlives


def test_U5_termination_problem_names_the_node_and_its_pods():
    pods = [make_pod("web-1"), make_pod("agent", owner="DaemonSet"), make_pod("bare", owner=None)]
    problem = termination_problem("i-1", node("node-a", unschedulable=True), pods)
    assert problem == dict(instance_id="i-1", node="node-a", cordoned=True, pods=["default/bare", "default/web-1"])
    assert termination_problem("i-1", node("node-a", unschedulable=True), pods[1:2]) is None
    uncordoned = termination_problem("i-2", node("node-b"), [])
    assert uncordoned["cordoned"] is False and uncordoned["pods"] == []
    message = termination_problems_message([problem, uncordoned])
    assert "instance i-1: node node-a still runs 2 pod(s)" in message and "default/bare, default/web-1" in message
    assert "instance i-2: node node-b is not cordoned" in message


class NodeListing(FakeCluster):
    """FakeCluster plus LIST nodes (label selector only, as the API server for spec.providerID)."""

    def list_node(self, **kwargs):
        selector = kwargs.get("label_selector")
        self._record(("list", "nodes", selector))
        key, _eq, value = (selector or "").partition("=")
        items = [n for n in self.nodes.values() if not selector or n["metadata"]["labels"].get(key) == value]
        return FakeResponse({"kind": "NodeList", "metadata": {"resourceVersion": "7"}, "items": items})


EKSCTL_LABEL = "alpha.eksctl.io/nodegroup-name"
EKSCTL_SELECTOR = EKSCTL_LABEL + "=workers"


def ec2_node(name, instance_id, nodegroup=None, unschedulable=False):
    """A node whose spec.providerID names its instance; ``nodegroup``: the eksctl node-group label it carries
    (none: a node of a plain self-managed group, which carries no node-group label, SPEC K1)."""
    result = node(name, unschedulable=unschedulable, labels={EKSCTL_LABEL: nodegroup} if nodegroup else {})
    result["spec"]["providerID"] = "aws:///us-west-2a/%s" % instance_id
    return result


def test_nodes_of_instances_lists_the_nodegroup_once_and_everything_only_for_the_missing():
    nodes = [ec2_node("node-a", "i-a", "workers"), ec2_node("node-b", "i-b", "workers"), ec2_node("stray", "i-c")]
    cluster = NodeListing(nodes=nodes)
    found = nodes_of_instances(KubeApi(cluster), ["i-a", "i-b"], EKSCTL_SELECTOR)
    assert sorted((i, n["metadata"]["name"]) for i, n in found.items()) == [("i-a", "node-a"), ("i-b", "node-b")]
    assert cluster.verbs("list", "nodes") == [("list", "nodes", EKSCTL_SELECTOR)]
    cluster.requests.clear()
    # a node that lost its label, and an instance with no node at all: one more LIST, of every node
    found = nodes_of_instances(KubeApi(cluster), ["i-a", "i-c", "i-gone"], EKSCTL_SELECTOR)
    assert sorted(found) == ["i-a", "i-c"]
    assert [r[2] for r in cluster.verbs("list", "nodes")] == [EKSCTL_SELECTOR, None]


def test_nodes_of_instances_without_a_selector_lists_every_node_once_K2():
    """A plain self-managed group labels no node: one LIST of every node, matched by spec.providerID."""
    cluster = NodeListing(nodes=[ec2_node("node-a", "i-a"), ec2_node("node-b", "i-b"), ec2_node("other", "i-z")])
    found = nodes_of_instances(KubeApi(cluster), ["i-a", "i-b", "i-gone"], None)
    assert sorted((i, n["metadata"]["name"]) for i, n in found.items()) == [("i-a", "node-a"), ("i-b", "node-b")]
    assert cluster.verbs("list", "nodes") == [("list", "nodes", None)]


def test_U5_undrained_instances_checks_each_node_with_one_pod_list():
    nodes = [ec2_node("node-a", "i-a", unschedulable=True), ec2_node("node-b", "i-b", unschedulable=True),
             ec2_node("node-c", "i-c")]
    pods = [make_pod("agent", owner="DaemonSet"), make_pod("web-1", node="node-b")]
    cluster = NodeListing(pods, nodes=nodes)
    problems, requests = undrained_instances(cluster, ["i-a", "i-b", "i-c", "i-never-joined"])
    assert problems == [dict(instance_id="i-b", node="node-b", cordoned=True, pods=["default/web-1"]),
                        dict(instance_id="i-c", node="node-c", cordoned=False, pods=[])]
    assert [r[2] for r in cluster.verbs("list", "pods")] == ["spec.nodeName=node-a", "spec.nodeName=node-b",
                                                             "spec.nodeName=node-c"]
    assert requests == len(cluster.requests)
    assert not cluster.verbs("patch") and not cluster.verbs("evict")


def test_U5_termination_check_also_names_the_instances_without_a_node():
    """K2: an instance no node names by providerID has nothing to drain; the caller reports why it has none."""
    cluster = NodeListing([make_pod("web-1", node="node-a")], nodes=[ec2_node("node-a", "i-a", unschedulable=True)])
    check = termination_check(cluster, ["i-a", "i-never-joined"], None)
    assert check["problems"] == [dict(instance_id="i-a", node="node-a", cordoned=True, pods=["default/web-1"])]
    assert check["nodeless"] == ["i-never-joined"] and check["requests"] == len(cluster.requests)
    assert termination_check(cluster, [], None) == dict(problems=[], nodeless=[], requests=0)


# ----------------------------------------------------------------------------------------------------------
# Cordon marks: undo only what this run changed (D1, U4)
# ----------------------------------------------------------------------------------------------------------

def test_cordon_mark_round_trips_and_reads_the_first_format():
    assert cordon_mark("run-1", ["unschedulable", "label"]) == "run-1"
    assert parse_cordon_mark("run-1") == ("run-1", frozenset(["unschedulable", "label"]))
    assert parse_cordon_mark(cordon_mark("run-1", ["label"])) == ("run-1", frozenset(["label"]))
    assert parse_cordon_mark(cordon_mark("a; set=b", ["unschedulable"])) == ("a; set=b", frozenset(["unschedulable"]))
    # a run id that merely looks like a mark stays whole
    assert parse_cordon_mark("x; set=other") == ("x; set=other", frozenset(["unschedulable", "label"]))


def test_D1_an_operators_cordon_survives_our_uncordon():
    operator = node(unschedulable=True)
    patch = cordon_patch(operator, "run-1", True)
    assert patch == {"metadata": {"labels": {EXCLUDE_LB_LABEL: "true"},
                                  "annotations": {CORDONED_BY_ANNOTATION: "run-1; set=label"}}}
    ours = apply_merge_patch(operator, patch)
    undo = uncordon_patch(ours, run_id="run-1")
    assert undo == {"metadata": {"annotations": {CORDONED_BY_ANNOTATION: None}, "labels": {EXCLUDE_LB_LABEL: None}}}
    restored = apply_merge_patch(ours, undo)
    assert restored["spec"]["unschedulable"] is True and EXCLUDE_LB_LABEL not in restored["metadata"]["labels"]


def test_U4_an_operators_label_survives_our_uncordon():
    operator = node(labels={EXCLUDE_LB_LABEL: "true"})
    ours = apply_merge_patch(operator, cordon_patch(operator, "run-1", True))
    assert ours["metadata"]["annotations"][CORDONED_BY_ANNOTATION] == "run-1; set=unschedulable"
    restored = apply_merge_patch(ours, uncordon_patch(ours, run_id="run-1"))
    assert not restored["spec"].get("unschedulable") and restored["metadata"]["labels"][EXCLUDE_LB_LABEL] == "true"
    # an explicit uncordon without a run id uncordons (kubectl parity) and still keeps their label
    assert uncordon_patch(ours) == {"spec": {"unschedulable": None},
                                    "metadata": {"annotations": {CORDONED_BY_ANNOTATION: None}}}


def test_a_mark_in_the_first_format_still_uncordons_everything():
    legacy = node(unschedulable=True, labels={EXCLUDE_LB_LABEL: "true"}, annotations={CORDONED_BY_ANNOTATION: "run-0"})
    assert uncordon_patch(legacy, run_id="run-0") == {
        "spec": {"unschedulable": None},
        "metadata": {"annotations": {CORDONED_BY_ANNOTATION: None}, "labels": {EXCLUDE_LB_LABEL: None}}}
    assert uncordon_patch(legacy, run_id="run-9") is None


def test_the_same_run_records_what_it_sets_later_and_leaves_another_runs_mark():
    labelled = apply_merge_patch(node(unschedulable=True), cordon_patch(node(unschedulable=True), "run-1", True))
    uncordoned = apply_merge_patch(labelled, {"spec": {"unschedulable": None}})   # kubectl uncordon in between
    patch = cordon_patch(uncordoned, "run-1", True)
    assert patch == {"spec": {"unschedulable": True}, "metadata": {"annotations": {CORDONED_BY_ANNOTATION: "run-1"}}}
    assert cordon_patch(uncordoned, "run-2", True) == {"spec": {"unschedulable": True}}
