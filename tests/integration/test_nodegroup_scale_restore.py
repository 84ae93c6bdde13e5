# -*- coding: utf-8 -*-
# Copyright: Contributors to the eksops.nodegroup project
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""nodegroup_scale_restore against the sandbox (SPEC U6, C2, C3, A1)."""

from __future__ import annotations

import time
from collections import Counter

import pytest

from asg_helpers import asg_state, base_args, edit_journal, node_annotations, point_asg_at_new_ami, workers_asg
from nodegroup_state import nodegroup_nodes
from sandbox_helpers import module_sandbox, run_module

SCENARIO = "surge5"
ORIGINAL = {"min": 3, "max": 10, "desired": 5}
C2 = "cluster-autoscaler.kubernetes.io/scale-down-disabled"
FAST_DRAIN = {"post_drain_wait": 0, "drain_timeout": 60, "wait_timeout": 60}


def surge(sandbox):
    result = run_module(sandbox, "asg_surge", dict(base_args(sandbox), wait_timeout=120))
    assert result["failed"] is False, result
    return result["surge"]


def test_without_a_journal_there_is_nothing_to_do(sandbox):
    before = asg_state(sandbox)
    result = run_module(sandbox, "nodegroup_scale_restore", base_args(sandbox))
    assert result["failed"] is False, result
    assert result["changed"] is False
    assert result["restore"]["journal_found"] is False
    assert asg_state(sandbox) == before


@pytest.mark.parametrize("extra,parameter", [
    ({"drain_timeout": 0}, "drain_timeout"),
    ({"post_drain_wait": -1}, "post_drain_wait"),
    ({"asg_name": "no-such-asg"}, "asg_name"),
])
def test_bad_input_names_the_parameter_and_changes_nothing(sandbox, extra, parameter):
    before = asg_state(sandbox)
    result = run_module(sandbox, "nodegroup_scale_restore", dict(base_args(sandbox), **extra))
    assert result["failed"] is True
    assert parameter in result["msg"]
    assert asg_state(sandbox) == before


def test_u6_after_a_rollback_the_restore_removes_the_new_nodes_first(sandbox):
    """U6 after a rollback (the group pointed back at its previous version): within each AZ the new nodes go
    before any old one, so the group keeps its good old nodes, not the failed new ones."""
    previous = workers_asg(sandbox)["LaunchTemplate"]
    target = point_asg_at_new_ami(sandbox)
    new_ids = {node["instance_id"] for node in surge(sandbox)["new_nodes"]}
    assert len(new_ids) == 6
    sandbox.client("autoscaling").update_auto_scaling_group(
        AutoScalingGroupName=target["asg_name"],
        LaunchTemplate={"LaunchTemplateId": previous["LaunchTemplateId"], "Version": previous["Version"]})
    instances = workers_asg(sandbox)["Instances"]
    assert {i["InstanceId"] for i in instances if i["LaunchTemplate"]["Version"] != previous["Version"]} == new_ids
    azs = {i["InstanceId"]: i["AvailabilityZone"] for i in instances}
    result = run_module(sandbox, "nodegroup_scale_restore", dict(base_args(sandbox), **FAST_DRAIN))
    assert result["failed"] is False, result
    removed = {i["instance_id"] for i in result["restore"]["removed_instances"]}
    assert len(removed) == 6
    kept = set(azs) - removed
    for az in set(azs.values()):
        removed_old = [i for i in removed if azs[i] == az and i not in new_ids]
        kept_new = [i for i in kept if azs[i] == az and i in new_ids]
        assert not (removed_old and kept_new), (az, removed_old, kept_new)
    after = asg_state(sandbox)
    assert {k: after[k] for k in ORIGINAL} == ORIGINAL and after["journal"] == {}


def test_u6_check_mode_plans_an_az_balanced_scale_in_and_changes_nothing(sandbox):
    point_asg_at_new_ami(sandbox)
    surge(sandbox)
    before = asg_state(sandbox)
    assert before["desired"] == 11 and before["journal"]
    result = run_module(sandbox, "nodegroup_scale_restore", dict(base_args(sandbox), **FAST_DRAIN),
                        check=True, diff=True)
    assert result["failed"] is False, result
    assert result["changed"] is True
    plan = result["restore"]
    assert plan["after"] == {"min_size": 3, "max_size": 10, "desired_capacity": 5}
    assert len(plan["removed_instances"]) == 6
    assert result["diff"]["after"]["suspended_processes"] == []
    assert asg_state(sandbox) == before


def test_u6_restore_drains_surplus_restores_sizes_resumes_processes_and_clears_the_journal(sandbox):
    result = run_module(sandbox, "nodegroup_scale_restore", dict(base_args(sandbox), **FAST_DRAIN))
    assert result["failed"] is False, result
    assert result["changed"] is True
    out = result["restore"]
    assert len(out["removed_instances"]) == 6
    assert sorted(out["resumed_processes"]) == [
        "AZRebalance", "AlarmNotification", "InstanceRefresh", "ReplaceUnhealthy", "ScheduledActions"]
    state = asg_state(sandbox)
    assert {k: state[k] for k in ORIGINAL} == ORIGINAL
    assert state["suspended"] == [] and state["journal"] == {}
    assert not any(C2 in a for a in node_annotations(sandbox).values())  # C2 annotation removed
    azs = Counter(i["AvailabilityZone"] for i in workers_asg(sandbox)["Instances"]
                  if i["LifecycleState"] == "InService")
    assert max(azs.values()) - min(azs.values()) <= 1, azs  # AZ-balanced
    report = sandbox.report()
    assert report["pods_lost"] == []  # drained, never killed with pods on them
    assert report["pdb_violations"] == []


def test_rerun_after_restore_is_idempotent(sandbox):
    before = asg_state(sandbox)
    result = run_module(sandbox, "nodegroup_scale_restore", dict(base_args(sandbox), **FAST_DRAIN))
    assert result["failed"] is False, result
    assert result["changed"] is False
    assert asg_state(sandbox) == before


def test_resumes_after_a_crash_between_terminate_and_journal_update(sandbox):
    surge(sandbox)
    state = asg_state(sandbox)
    autoscaling = sandbox.client("autoscaling")
    # a previous restore run got as far as terminating one instance with decrement, then died
    edit_journal(sandbox, phase="scale_down")
    autoscaling.terminate_instance_in_auto_scaling_group(InstanceId=state["instances"][0],
                                                         ShouldDecrementDesiredCapacity=True)
    result = run_module(sandbox, "nodegroup_scale_restore", dict(base_args(sandbox), **FAST_DRAIN))
    assert result["failed"] is False, result
    assert len(result["restore"]["removed_instances"]) == state["desired"] - 1 - ORIGINAL["desired"]
    after = asg_state(sandbox)
    assert {k: after[k] for k in ORIGINAL} == ORIGINAL and after["journal"] == {}


def test_c3_crash_between_a_surge_step_terminate_and_its_journal_write_is_not_the_autoscaler(sandbox):
    """C3: the last surge step recorded the capacity its termination leaves (pending_decrement), terminated
    with decrement and died before its journal write; the restore finishes instead of reporting
    ClusterAutoscalerActive."""
    point_asg_at_new_ami(sandbox)
    state = asg_state(sandbox)
    step = run_module(sandbox, "asg_surge", dict(base_args(sandbox), mode="desired",
                                                 desired_capacity=state["desired"] + 1, pending_decrement=1,
                                                 wait_timeout=120))
    assert step["failed"] is False, step
    assert asg_state(sandbox)["journal"]["desired_capacity_pending"] == str(state["desired"])
    sandbox.client("autoscaling").terminate_instance_in_auto_scaling_group(
        InstanceId=state["instances"][0], ShouldDecrementDesiredCapacity=True)
    result = run_module(sandbox, "nodegroup_scale_restore", dict(base_args(sandbox), **FAST_DRAIN))
    assert result["failed"] is False, result
    assert result["restore"]["autoscaler_detected"] is False
    after = asg_state(sandbox)
    assert {k: after[k] for k in ORIGINAL} == ORIGINAL and after["journal"] == {} and after["suspended"] == []


autoscaler_sandbox = module_sandbox("fault_autoscaler")


def test_c3_restore_refuses_when_the_autoscaler_scaled_the_group(autoscaler_sandbox):
    sandbox = autoscaler_sandbox
    point_asg_at_new_ami(sandbox)
    old = asg_state(sandbox)["instances"]
    surge(sandbox)
    # as the upgrade does: drain, then terminate (asg_instance_terminate refuses undrained instances, SPEC U5)
    drained = run_module(sandbox, "node_drain", dict(base_args(sandbox), instance_ids=old, post_drain_wait=0,
                                                     delete_options={"wait_timeout": 60}))
    assert drained["failed"] is False, drained
    terminated = run_module(sandbox, "asg_instance_terminate", dict(
        base_args(sandbox), instance_ids=old, should_decrement_desired_capacity=True, wait_timeout=60))
    assert terminated["failed"] is False, terminated
    deadline = time.time() + 30
    while asg_state(sandbox)["desired"] == 6 and time.time() < deadline:
        time.sleep(0.5)
    before = asg_state(sandbox)
    assert before["desired"] == 8, "the sandbox autoscaler did not act"

    result = run_module(sandbox, "nodegroup_scale_restore", dict(base_args(sandbox), **FAST_DRAIN))
    assert result["failed"] is True
    assert result["code"] == "ClusterAutoscalerActive"
    assert "8" in result["msg"] and "6" in result["msg"]
    assert isinstance(result["scaling_activities"], list) and result["scaling_activities"]
    assert asg_state(sandbox) == before  # nothing restored


def test_c3_on_autoscaler_stop_reports_without_failing(autoscaler_sandbox):
    sandbox = autoscaler_sandbox
    before = asg_state(sandbox)
    result = run_module(sandbox, "nodegroup_scale_restore", dict(base_args(sandbox), on_autoscaler="stop",
                                                                 **FAST_DRAIN))
    assert result["failed"] is False, result
    assert result["changed"] is False and result["restore"]["autoscaler_detected"] is True
    assert asg_state(sandbox) == before


# --- SPEC B1 (issue 11 item 1): the surplus of the schedule once ----------------------------------------------

SURPLUS = "eksops.nodegroup/surplus"
EXCLUDE_LB = "node.kubernetes.io/exclude-from-external-load-balancers"


two_node_sandbox = module_sandbox("two_nodes_three_azs")


def test_b1_the_scale_up_journals_the_counts_and_cordons_the_surplus_then_restore_removes_it_first(two_node_sandbox):
    """SPEC B1, C3, U3: a 2-node group over 3 AZs (1-1-0) surged by EKS's 6 keeps 1-1-0 new nodes at the end, so 4
    new nodes are surplus: marked, cordoned and excluded from load balancers once Ready, kept on a rerun, another
    schedule refused naming it, and removed first by the restore."""
    sandbox = two_node_sandbox
    point_asg_at_new_ami(sandbox)
    result = run_module(sandbox, "asg_surge", dict(base_args(sandbox), wait_timeout=120, schedule="once"))
    assert result["failed"] is False, result
    out = result["surge"]
    assert out["schedule"] == "once" and out["start_per_az"] == {"us-west-2a": 1, "us-west-2b": 1, "us-west-2c": 0}
    assert out["surge"] == 6 and len(out["surplus_nodes"]) == 4
    state = asg_state(sandbox)
    assert state["journal"]["schedule"] == "once"
    assert state["journal"]["start_per_az"] == "us-west-2a=1,us-west-2b=1,us-west-2c=0"
    run_id = state["journal"]["run_id"]
    surplus = {node["node_name"] for node in out["surplus_nodes"]}
    nodes = {node.metadata.name: node for node in nodegroup_nodes(sandbox)}
    for name in surplus:
        assert (nodes[name].metadata.annotations or {}).get(SURPLUS) == run_id
        assert nodes[name].spec.unschedulable is True and nodes[name].metadata.labels.get(EXCLUDE_LB) == "true"
    kept = [node for name, node in nodes.items() if name not in surplus]
    assert not any(node.spec.unschedulable for node in kept)

    # A rerun asking for EKS's schedule is refused before any change, naming the parameter.
    refused = run_module(sandbox, "asg_surge", dict(base_args(sandbox), wait_timeout=120, schedule="eks"))
    assert refused["failed"] is True and "schedule" in refused["msg"], refused
    assert asg_state(sandbox) == state
    # The same schedule again keeps the marks (the choice is never made twice).
    again = run_module(sandbox, "asg_surge", dict(base_args(sandbox), wait_timeout=120, schedule="once"))
    assert again["failed"] is False, again
    assert {node["node_name"] for node in again["surge"]["surplus_nodes"]} == surplus

    result = run_module(sandbox, "nodegroup_scale_restore", dict(base_args(sandbox), **FAST_DRAIN))
    assert result["failed"] is False, result
    restore = result["restore"]
    assert restore["schedule"] == "once" and len(restore["removed_instances"]) == 6
    assert {i["node_name"] for i in restore["removed_instances"][:4]} == surplus
    assert asg_state(sandbox)["desired"] == 2 and asg_state(sandbox)["journal"] == {}
    assert sandbox.report()["pods_lost"] == []


# --- Issue 29 item 4: a MaxSize changed by hand during the upgrade ---------------------------------------------

hand_sandbox = module_sandbox(SCENARIO)


def test_issue29_a_maxsize_changed_by_hand_is_kept_and_said(hand_sandbox):
    """Issue 29 item 4: someone raises MaxSize from 10 to 20 while the surge runs (capacity planning, an apply);
    the restore removes the surplus and puts back MinSize and DesiredCapacity, but keeps MaxSize 20 instead of
    overwriting it with the 10 it had before, and says so in a warning, its result and its diff."""
    sandbox = hand_sandbox
    point_asg_at_new_ami(sandbox)
    surge(sandbox)
    name = workers_asg(sandbox)["AutoScalingGroupName"]
    assert asg_state(sandbox)["max"] == 11  # the surge's 5 + 6
    sandbox.client("autoscaling").update_auto_scaling_group(AutoScalingGroupName=name, MaxSize=20)
    result = run_module(sandbox, "nodegroup_scale_restore", dict(base_args(sandbox), **FAST_DRAIN), diff=True)
    assert result["failed"] is False, result
    after = asg_state(sandbox)
    assert (after["min"], after["max"], after["desired"], after["journal"]) == (3, 20, 5, {})
    assert result["restore"]["kept_sizes"] == [dict(size="max_size", aws_name="MaxSize", before_upgrade=10,
                                                    set_by_upgrade=11, found=20)]
    assert result["diff"]["after"]["max_size"] == 20 and result["diff"]["after"]["kept_sizes"] == ["max_size"]
    [warning] = [w for w in result.get("warnings", []) if "MaxSize" in w]
    assert "is 20" in warning and "the 11 the upgrade set" in warning and "putting back 10" in warning
