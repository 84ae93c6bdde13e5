# -*- coding: utf-8 -*-
# Copyright: Contributors to the eksops.nodegroup project
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""node_replace planning the upgrade phase itself (issue 11 item 4: one process for the phase): the plan is
nodegroup_info's, every old node is cordoned first (SPEC U4), and the old instances left are told after (U5)."""

from __future__ import annotations

from unittest import mock

import pytest
from ansible.module_utils.common.arg_spec import ArgumentSpecValidator
from moto import mock_aws

from ansible_collections.eksops.nodegroup.plugins.module_utils.host.clients import Clients

from ansible_collections.eksops.nodegroup.plugins.module_utils.nodegroup.cluster_proof import prove_cluster
from ansible_collections.eksops.nodegroup.plugins.module_utils.errors import UpgradeError
from ansible_collections.eksops.nodegroup.plugins.module_utils.nodegroup.kinds import MANAGED
from ansible_collections.eksops.nodegroup.plugins.module_utils.phases.replace.phase import (
    cordon_old_nodes,
    full_argument_spec,
    old_instances_left,
    plan_line,
    plan_phase,
    step_options,
    validate_schedule,
)
from ansible_collections.eksops.nodegroup.plugins.modules import nodegroup_info

from ..fakes import FakeCoreV1
from ..moto_nodegroup import AWS_PARAMS, CLUSTER, NODEGROUP, MotoNodegroup, moto_client, run_module_in_process

EXCLUDE_LABEL = "node.kubernetes.io/exclude-from-external-load-balancers"


def params(**overrides):
    args = dict(AWS_PARAMS, cluster_name=CLUSTER, nodegroup_name=NODEGROUP, kubeconfig="/unused",
                delete_options=dict(wait_timeout=60))
    args.update(overrides)
    result = ArgumentSpecValidator(full_argument_spec()).validate(args)
    assert not result.error_messages, result.error_messages
    return result.validated_parameters


def upgraded_target(world):
    """The group pinned to a new launch template version (the setup phase's work): every instance is old."""
    version = world.add_version(ImageId=world.new_ami)
    world.autoscaling.update_auto_scaling_group(
        AutoScalingGroupName=world.asg_name, LaunchTemplate=dict(LaunchTemplateId=world.lt_id, Version=str(version)))


@pytest.fixture
def world():
    with mock_aws():
        world = MotoNodegroup(desired=4)
        upgraded_target(world)
        yield world


@pytest.fixture
def core_v1(world):
    core_v1 = FakeCoreV1(world.raw_nodes())
    with mock.patch.object(Clients, "core_v1", lambda self: core_v1):
        yield core_v1


def clients(args):
    return Clients(args, "test", aws_clients=moto_client, proof=prove_cluster)


def test_given_batches_are_the_plan_and_nothing_is_read():
    args = params(batches=[["i-0a"], ["i-0b"]])
    planned, plan, group = plan_phase(args, None, [].append)
    assert plan is None and group is None and planned == args


def test_without_batches_the_phase_is_planned_as_nodegroup_info_plans_it(world, core_v1, capsys):
    args = params(max_unavailable=2, seed=5)
    planned, plan, group = plan_phase(args, clients(args), [].append)
    with mock.patch.object(nodegroup_info.EksopsModule, "core_v1", lambda self: core_v1):
        info = run_module_in_process(nodegroup_info.main, dict(cluster_name=CLUSTER, nodegroup_name=NODEGROUP,
                                                               kubeconfig="/unused", max_unavailable=2, seed=5), capsys)
    assert plan == info["nodegroup"]["plan"]
    assert len(plan["batches"]) == 2 and sorted(sum(plan["batches"], [])) == sorted(info["nodegroup"]["old_instances"])
    assert (planned["batches"], planned["batch_size"], planned["seed"]) == (plan["batches"], 2, 5)
    assert planned["asg_name"] == group.asg_name == world.asg_name and planned["run_id"] is None  # no journal: no upgrade under way
    assert planned["node_names"] == dict((i["instance_id"], i["node_name"]) for i in info["nodegroup"]["instances"])
    assert plan_line(plan) == ("4 of 4 nodes run an old launch template version; replacing them 2 at a time in 2 "
                               "batches (strategy rolling, seed 5).")


def test_issue26_item2_with_max_surge_node_replace_plans_the_surge_steps_as_nodegroup_info_plans_them(
        world, core_v1, capsys):
    """One replace path for both strategies: the surge role's nodegroup_info task (the plan) is node_replace's own
    planning, with the same plan, and its steps are what the loop runs (SPEC S1-S4)."""
    args = params(max_surge=2, max_unavailable=1, seed=5, schedule="eks")
    planned, plan, group = plan_phase(args, clients(args), [].append)
    with mock.patch.object(nodegroup_info.EksopsModule, "core_v1", lambda self: core_v1):
        info = run_module_in_process(nodegroup_info.main, dict(cluster_name=CLUSTER, nodegroup_name=NODEGROUP,
                                                               kubeconfig="/unused", max_surge=2, max_unavailable=1,
                                                               seed=5), capsys)
    assert plan == info["nodegroup"]["plan"] and plan["strategy"] == "surge"
    assert (planned["steps"], planned["batches"], planned["seed"]) == (plan["steps"], None, 5)
    assert planned["asg_name"] == group.asg_name == world.asg_name
    assert step_options(planned, False).surge["mode"] == "desired"
    assert plan_line(plan) == ("4 of 4 nodes run an old launch template version; replacing them in 2 steps with "
                               "max_surge 2 and max_unavailable 1: the group stays between 3 and 6 nodes (desired "
                               "capacity at each step: %s; seed 5)." % ", ".join(
                                   str(step["desired_capacity"]) for step in plan["steps"]))


def test_issue26_item2_max_surge_refuses_the_rolling_strategies_options_by_name():
    for name, value in (("schedule", "once"), ("cordon_old_nodes", True), ("wait_for_replacements", True)):
        with pytest.raises(UpgradeError) as refused:
            validate_schedule(params(max_surge=1, **dict(dict(schedule="eks"), **{name: value})))
        assert refused.value.details["parameter"] == name


def test_a_bad_parallelism_is_refused_by_name_before_anything_changes(world, core_v1):
    with pytest.raises(UpgradeError) as refused:
        plan_phase(params(max_unavailable=0), clients(params()), [].append)
    assert refused.value.details["parameter"] == "max_unavailable"
    assert core_v1.patches == []


def test_a_managed_node_group_is_refused():
    with mock_aws():
        MotoNodegroup(desired=2, kind=MANAGED)
        args = params()
        with pytest.raises(UpgradeError) as refused:
            plan_phase(args, clients(args), [].append)
    assert refused.value.details["parameter"] == "nodegroup_name" and "EKS managed" in refused.value.msg


def test_every_old_node_is_cordoned_and_labelled_out_of_the_load_balancers_first(world, core_v1):
    args = params(seed=3)
    planned, _plan, _group = plan_phase(args, clients(args), [].append)
    cordoned = cordon_old_nodes(planned, step_options(planned, False), clients(args), False, False, [].append, lambda line: None)
    assert cordoned["changed"] is True and set(cordoned["drain"]["nodes"]) == set(core_v1.nodes)
    for node in core_v1.nodes.values():
        assert node["spec"]["unschedulable"] is True
        assert node["metadata"]["labels"][EXCLUDE_LABEL] == "true"


def test_in_check_mode_the_cordon_is_only_reported(world, core_v1):
    args = params(seed=3)
    planned, _plan, _group = plan_phase(args, clients(args), [].append)
    cordoned = cordon_old_nodes(planned, step_options(planned, True), clients(args), True, False, [].append, lambda line: None)
    assert set(cordoned["drain"]["nodes"]) == set(core_v1.nodes) and core_v1.patches == []


def test_no_old_instance_no_cordon(world, core_v1):
    assert cordon_old_nodes(params(batches=[]), step_options(params(batches=[]), False), clients(params()), False, False, [].append, lambda line: None) is None
    assert core_v1.patches == []


def test_the_old_instances_left_are_told_after_the_loop(world, core_v1):
    args = params()
    assert sorted(old_instances_left(args, clients(args), [].append)) == sorted(
        i["InstanceId"] for i in world.asg()["Instances"])


def test_the_phase_describes_each_instance_from_ec2_once(world, core_v1):
    """Issue 11 item 4: the plan, the live planner's reads and the check for old instances left all join the
    group's instances with the same EC2 descriptions: what the join reads never changes in an instance's life."""
    described = []

    def recording_client(service):
        client = moto_client(service)
        if service == "ec2":
            client.meta.events.register("provide-client-params.ec2.DescribeInstances",
                                        lambda params, **kwargs: described.extend(params.get("InstanceIds", [])))
        return client

    args = params(schedule="once")
    phase_clients = Clients(args, "test", aws_clients=recording_client, proof=prove_cluster)
    planned, _plan, _group = plan_phase(args, phase_clients, [].append)
    old_instances_left(planned, phase_clients, [].append)
    members = sorted(i["InstanceId"] for i in world.asg()["Instances"])
    assert sorted(described) == members


def set_back_mid_upgrade(world):
    """An upgrade to the group's version under way (its journal), and the group pointed back at version 1."""
    from ansible_collections.eksops.nodegroup.plugins.module_utils.nodegroup.journal import Journal, write_journal

    target = world.asg()["LaunchTemplate"]["Version"]
    write_journal(world.autoscaling, world.asg_name, Journal.start(
        phase="upgrade", launch_template_id=world.lt_id, target_launch_template_version=target))
    world.autoscaling.update_auto_scaling_group(
        AutoScalingGroupName=world.asg_name, LaunchTemplate=dict(LaunchTemplateId=world.lt_id, Version="1"))
    return target


def test_issue29_a_launch_template_version_set_back_by_hand_stops_the_phase_before_the_cordon(world, core_v1):
    """Issue 29 item 4: the phase's plan refuses a group pointed back at another version than its journal's target,
    before any old node is cordoned (before, the upgraded nodes were cordoned as old ones)."""
    target = set_back_mid_upgrade(world)
    args = params(seed=3)
    with pytest.raises(UpgradeError) as stopped:
        plan_phase(args, clients(args), [].append)
    assert stopped.value.code == "LaunchTemplateVersionChanged"
    assert (stopped.value.details["launch_template_version"], stopped.value.details["target_launch_template_version"]) \
        == ("1", target)
    assert core_v1.patches == []


def test_issue29_a_launch_template_version_set_back_by_hand_stops_before_the_next_batch(world, core_v1):
    """Between batches: the group is read again before each batch's drain."""
    from ansible_collections.eksops.nodegroup.plugins.module_utils.phases.replace.phase import check_target_unmoved
    from ansible_collections.eksops.nodegroup.plugins.module_utils.host.step_context import StepContext

    args = params(seed=3)
    context = StepContext(args, clients(args), False, False, [].append, lambda line: None)
    group = plan_phase(args, clients(args), [].append)[2]
    check_target_unmoved(context, None)  # no journal: nothing to compare
    set_back_mid_upgrade(world)
    for known in (None, group):  # found here, or as the last termination read it
        with pytest.raises(UpgradeError) as stopped:
            check_target_unmoved(context, known)
        assert stopped.value.code == "LaunchTemplateVersionChanged"
