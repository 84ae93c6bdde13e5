# -*- coding: utf-8 -*-
# Copyright: Contributors to the eksops.nodegroup project
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""nodegroup_info against the demo sandbox: read-only, joined with the nodes, plans (SPEC U1, U2, U5, P2)."""

from __future__ import annotations

import pytest

from nodegroup_state import asg_name_of, aws_state, call_counts, calls_between, image_id_by_name, mutating_calls
from sandbox_helpers import run_module

SCENARIO = "demo"
BASE = {"cluster_name": "demo", "nodegroup_name": "workers"}
NEW_AMI = "amazon-eks-node-al2023-x86_64-standard-1.30-v20240615"


def test_describes_the_group_joined_with_its_nodes_and_changes_nothing(sandbox):
    before, calls_before = aws_state(sandbox), call_counts(sandbox)
    result = run_module(sandbox, "nodegroup_info", BASE)
    calls = calls_between(calls_before, call_counts(sandbox))
    assert result["failed"] is False, result
    assert result["changed"] is False
    group = result["nodegroup"]
    # K1: demo's group is self-managed (terraform-aws-eks): found by its Name and cluster tags, no node label.
    assert (group["kind"], group["node_selector"], group["managed"]) == ("self_managed", None, None)
    assert group["asg_name"] == asg_name_of(sandbox)
    assert (group["asg"]["min_size"], group["asg"]["max_size"], group["asg"]["desired_capacity"]) == (3, 12, 6)
    nodes = {n.metadata.name for n in sandbox.core_v1().list_node().items}
    assert {i["node_name"] for i in group["instances"]} == nodes
    assert all(i["ready"] and not i["unschedulable"] for i in group["instances"])
    assert [(az["name"], az["instances"]) for az in group["azs"]] == [
        ("us-west-2a", 2), ("us-west-2b", 2), ("us-west-2c", 2)]
    # The default target is what the group launches now: nothing is old.
    assert group["old_instances"] == [] and len(group["new_instances"]) == 6
    assert group["journal"] is None
    assert aws_state(sandbox) == before
    assert mutating_calls(calls) == {}
    # P2 and scale: a fixed number of calls whatever the group's size. Discovery by kind (K1) asks EKS once
    # (no managed node group of that name) and describes the ASGs twice (eksctl's tags, the cluster tag); then
    # one EC2 describe and one node LIST (a terraform group labels no node: every node, matched by providerID).
    assert calls.get("DescribeNodegroup ResourceNotFoundException") == 1, calls
    assert calls["DescribeAutoScalingGroups OK"] == 2 and calls["DescribeInstances OK"] == 1, calls
    assert calls["eksops.nodegroup/0.1.0/nodegroup_info list nodes 200"] == 1
    assert not [key for key in calls if " pods " in key]


def test_plans_the_upgrade_to_a_new_ami(sandbox):
    """U2: surge = max(2 x 3 AZs, max_unavailable); U5: random batches covering every old node once."""
    new_ami = image_id_by_name(sandbox, NEW_AMI)
    result = run_module(sandbox, "nodegroup_info", {**BASE, "target": new_ami, "max_unavailable": 4, "seed": 3})
    group = result["nodegroup"]
    assert len(group["old_instances"]) == 6 and group["new_instances"] == []
    plan = group["plan"]
    assert (plan["strategy"], plan["surge"], plan["max_unavailable"], plan["seed"]) == ("rolling", 6, 4, 3)
    assert sorted(i for batch in plan["batches"] for i in batch) == sorted(group["old_instances"])
    assert [len(batch) for batch in plan["batches"]] == [4, 2]
    again = run_module(sandbox, "nodegroup_info", {**BASE, "target": new_ami, "max_unavailable": 4, "seed": 3})
    assert again["nodegroup"]["plan"]["batches"] == plan["batches"]


def test_check_mode_gives_the_same_answer(sandbox):
    result = run_module(sandbox, "nodegroup_info", {**BASE, "seed": 1, "max_surge": 2, "max_unavailable": 1},
                        check=True)
    assert result["changed"] is False and result["failed"] is False
    assert result["nodegroup"]["plan"]["strategy"] == "surge"


@pytest.mark.parametrize("args, parameter, named", [
    ({"cluster_name": "nope"}, "cluster_name", "nope"),
    ({"nodegroup_name": "nope"}, "nodegroup_name", "nope"),
    ({"asg_name": "nope"}, "asg_name", "nope"),
    ({"target": "ami-00000000000000000"}, "target", "ami-00000000000000000"),
    ({"target": "99"}, "target", "99"),
    ({"max_unavailable": 0}, "max_unavailable", "max_unavailable"),
    ({"max_unavailable": 101}, "max_unavailable", "max_unavailable"),
    ({"max_unavailable_percentage": 101}, "max_unavailable_percentage", "max_unavailable_percentage"),
    ({"max_surge": 0, "max_unavailable": 0}, "max_surge", "cannot both be 0"),  # SPEC S1
    ({"max_surge": 15, "max_unavailable": 10}, "max_surge", "must not exceed 20"),  # SPEC S1 cap
])
def test_bad_input_names_the_problem(sandbox, args, parameter, named):
    result = run_module(sandbox, "nodegroup_info", {**BASE, **args})
    assert result["failed"] is True
    assert result["parameter"] == parameter, result
    assert named in result["msg"]
    assert result["code"] in ("ResourceNotFound", "InvalidParameter")
