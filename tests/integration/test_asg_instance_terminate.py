# -*- coding: utf-8 -*-
# Copyright: Contributors to the eksops.nodegroup project
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""asg_instance_terminate against the sandbox (SPEC U5 termination step, U6 decrement, C3 journal)."""

from __future__ import annotations

import time

import pytest

from asg_helpers import asg_state, base_args, edit_journal, workers_asg
from sandbox_helpers import run_module

SCENARIO = "demo"


def in_service(sandbox):
    return sorted(i["InstanceId"] for i in workers_asg(sandbox)["Instances"] if i["LifecycleState"] == "InService")


def ec2_state(sandbox, instance_id):
    reservations = sandbox.client("ec2").describe_instances(InstanceIds=[instance_id])["Reservations"]
    return reservations[0]["Instances"][0]["State"]["Name"]


def node_of(sandbox, instance_id):
    [node] = [n for n in sandbox.core_v1().list_node().items if n.spec.provider_id.endswith("/" + instance_id)]
    return node


def pods_on(sandbox, node_name):
    pods = sandbox.core_v1().list_pod_for_all_namespaces(field_selector="spec.nodeName=%s" % node_name).items
    return [p for p in pods if not any(o.kind == "DaemonSet" for o in p.metadata.owner_references or [])]


def empty_nodes_of(sandbox, instance_ids):
    """Set-up standing in for a drain: cordon the instances' nodes and delete their pods at once (DaemonSet pods
    stay), so the termination under test is allowed (U5)."""
    core = sandbox.core_v1()
    names = [node_of(sandbox, instance_id).metadata.name for instance_id in instance_ids]
    for name in names:
        core.patch_node(name, {"spec": {"unschedulable": True}})
        for pod in pods_on(sandbox, name):
            core.delete_namespaced_pod(pod.metadata.name, pod.metadata.namespace, grace_period_seconds=0)
    deadline = time.time() + 30
    while any(pods_on(sandbox, name) for name in names):
        assert time.time() < deadline, "pods did not leave %s" % names
        time.sleep(0.2)


@pytest.mark.parametrize("extra,parameter", [
    ({"instance_ids": ["i-0123456789abcdef0"], "should_decrement_desired_capacity": False}, "instance_ids"),
    ({"instance_ids": ["not-an-id"], "should_decrement_desired_capacity": False}, "instance_ids"),
    ({"instance_ids": [], "should_decrement_desired_capacity": False}, "instance_ids"),
    ({"instance_ids": ["i-0123456789abcdef0"], "should_decrement_desired_capacity": True,
      "wait_for_replacements": True}, "wait_for_replacements"),
])
def test_bad_input_names_the_parameter_and_changes_nothing(sandbox, extra, parameter):
    before = asg_state(sandbox)
    result = run_module(sandbox, "asg_instance_terminate", dict(base_args(sandbox), **extra))
    assert result["failed"] is True
    assert parameter in result["msg"]
    if parameter == "instance_ids" and extra["instance_ids"]:
        assert extra["instance_ids"][0] in result["msg"]
    assert asg_state(sandbox) == before


def test_an_instance_of_another_group_is_refused_by_id(sandbox):
    ec2 = sandbox.client("ec2")
    image = workers_asg(sandbox)["Instances"][0]
    stranger = ec2.run_instances(ImageId=ec2.describe_instances(InstanceIds=[image["InstanceId"]])[
        "Reservations"][0]["Instances"][0]["ImageId"], MinCount=1, MaxCount=1)["Instances"][0]["InstanceId"]
    before = asg_state(sandbox)
    result = run_module(sandbox, "asg_instance_terminate", dict(
        base_args(sandbox), instance_ids=[stranger], should_decrement_desired_capacity=False))
    assert result["failed"] is True and result["code"] == "InvalidParameter"
    assert stranger in result["msg"] and "not in Auto Scaling group" in result["msg"]
    assert asg_state(sandbox) == before


def test_decrement_below_min_size_outside_an_upgrade_is_refused(sandbox):
    before = asg_state(sandbox)
    result = run_module(sandbox, "asg_instance_terminate", dict(
        base_args(sandbox), instance_ids=in_service(sandbox)[:4], should_decrement_desired_capacity=True))
    assert result["failed"] is True
    assert "should_decrement_desired_capacity" in result["msg"] and "MinSize" in result["msg"]
    assert asg_state(sandbox) == before


def test_u5_an_undrained_instance_is_refused_naming_its_node_and_pods(sandbox):
    before = asg_state(sandbox)
    victim = next(i for i in in_service(sandbox) if pods_on(sandbox, node_of(sandbox, i).metadata.name))
    node = node_of(sandbox, victim).metadata.name
    pods = sorted("%s/%s" % (p.metadata.namespace, p.metadata.name) for p in pods_on(sandbox, node))
    result = run_module(sandbox, "asg_instance_terminate", dict(
        base_args(sandbox), instance_ids=[victim], should_decrement_desired_capacity=False, wait_timeout=30))
    assert result["failed"] is True and result["code"] == "PodEvictionFailure"
    assert victim in result["msg"] and node in result["msg"] and "not cordoned" in result["msg"]
    assert all(pod in result["msg"] for pod in pods)
    assert result["undrained"] == [dict(instance_id=victim, node=node, cordoned=False, pods=pods)]
    assert asg_state(sandbox) == before and ec2_state(sandbox, victim) == "running"

    # cordoned is not enough while pods are still there
    sandbox.core_v1().patch_node(node, {"spec": {"unschedulable": True}})
    try:
        result = run_module(sandbox, "asg_instance_terminate", dict(
            base_args(sandbox), instance_ids=[victim], should_decrement_desired_capacity=True, wait_timeout=30))
        assert result["failed"] is True and result["code"] == "PodEvictionFailure"
        assert "not cordoned" not in result["msg"] and pods[0] in result["msg"]
        assert asg_state(sandbox) == before and ec2_state(sandbox, victim) == "running"
    finally:
        sandbox.core_v1().patch_node(node, {"spec": {"unschedulable": None}})


def test_check_mode_plans_and_changes_nothing(sandbox):
    before = asg_state(sandbox)
    victim = in_service(sandbox)[0]
    result = run_module(sandbox, "asg_instance_terminate", dict(
        base_args(sandbox), instance_ids=[victim], should_decrement_desired_capacity=True), check=True, diff=True)
    assert result["failed"] is False, result
    assert result["changed"] is True
    assert result["termination"]["terminated"] == [victim]
    assert result["termination"]["after"]["desired_capacity"] == before["desired"] - 1
    assert victim not in result["diff"]["after"]["instance_ids"]
    assert asg_state(sandbox) == before
    assert ec2_state(sandbox, victim) == "running"


def test_u5_terminate_without_decrement_waits_for_a_ready_replacement(sandbox):
    victim = in_service(sandbox)[0]
    empty_nodes_of(sandbox, [victim])
    result = run_module(sandbox, "asg_instance_terminate", dict(
        base_args(sandbox), instance_ids=[victim], should_decrement_desired_capacity=False,
        wait_for_replacements=True, wait_timeout=90))
    assert result["failed"] is False, result
    assert result["changed"] is True
    out = result["termination"]
    assert out["terminated"] == [victim]
    assert out["after"]["desired_capacity"] == 6
    assert len(out["replacements"]) == 1 and out["replacements"][0]["ready"] is True
    assert ec2_state(sandbox, victim) == "terminated"
    state = asg_state(sandbox)
    assert state["desired"] == 6 and victim not in state["instances"]
    assert out["replacements"][0]["instance_id"] in state["instances"]


def test_rerun_on_a_terminated_instance_is_idempotent(sandbox):
    victim = sandbox.client("ec2").describe_instances(Filters=[
        {"Name": "instance-state-name", "Values": ["terminated"]}])["Reservations"][0]["Instances"][0]["InstanceId"]
    before = asg_state(sandbox)
    result = run_module(sandbox, "asg_instance_terminate", dict(
        base_args(sandbox), instance_ids=[victim], should_decrement_desired_capacity=False, wait_timeout=30))
    assert result["failed"] is False, result
    assert result["changed"] is False
    assert result["termination"]["already_terminated"] == [victim]
    assert asg_state(sandbox) == before


def test_u6_decrement_lowers_desired_and_records_it_in_the_journal(sandbox):
    # an upgrade in progress: the journal says we set the desired capacity to 6
    edit_journal(sandbox, run_id="test", phase="upgrade", desired_capacity_set=6, original_min_size=3)
    victims = in_service(sandbox)[:4]
    empty_nodes_of(sandbox, victims)
    result = run_module(sandbox, "asg_instance_terminate", dict(
        base_args(sandbox), instance_ids=victims, should_decrement_desired_capacity=True, wait_timeout=60))
    assert result["failed"] is False, result
    state = asg_state(sandbox)
    # 6 - 4 = 2 is below MinSize 3: lowered during the upgrade; restore puts original_min_size back
    assert state["desired"] == 2 and state["min"] == 2
    assert state["journal"]["desired_capacity_set"] == "2"
    assert all(ec2_state(sandbox, v) == "terminated" for v in victims)
    assert sandbox.report()["pods_lost"] == []
