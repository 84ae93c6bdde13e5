# -*- coding: utf-8 -*-
# Copyright: Contributors to the eksops.nodegroup project
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""The nodes of EC2 instances and the check before an instance is terminated (module_utils/members/nodes.py, SPEC U5, K2):
only drained nodes go."""

from __future__ import annotations

import pytest

from ansible_collections.eksops.nodegroup.plugins.module_utils._drain.api import KubeApi
from ansible_collections.eksops.nodegroup.plugins.module_utils._drain.drained import (
    nodes_of_instances,
    pod_outlives_node,
    termination_check,
    termination_problem,
    termination_problems_message,
    undrained_instances,
)

from ..fakes import EKSCTL_SELECTOR, NodeListing, ec2_node, make_pod, node


# ----------------------------------------------------------------------------------------------------------
# Which pods a termination would lose (U5)
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


# ----------------------------------------------------------------------------------------------------------
# The nodes of instances, and the check before terminating them (U5, K2)
# ----------------------------------------------------------------------------------------------------------

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
