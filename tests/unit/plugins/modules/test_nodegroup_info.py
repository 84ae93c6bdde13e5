# -*- coding: utf-8 -*-
# Copyright: Contributors to the eksops.nodegroup project
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""nodegroup_info run in-process against moto, with the node LIST faked (SPEC U1, U2, U5, U7, S4)."""

from __future__ import annotations

from unittest import mock

import pytest
from moto import mock_aws

from ansible_collections.eksops.nodegroup.plugins.module_utils.nodegroup import kinds
from ansible_collections.eksops.nodegroup.plugins.module_utils.host import clock as clocks
from ansible_collections.eksops.nodegroup.plugins.module_utils.nodegroup.journal import Journal, write_journal
from ansible_collections.eksops.nodegroup.plugins.module_utils.host.module import EksopsModule
from ansible_collections.eksops.nodegroup.plugins.module_utils.steps import nodegroup_info as nodegroup_describe
from ansible_collections.eksops.nodegroup.plugins.modules import nodegroup_info

from ..fakes import FakeClock, FakeCoreV1, api_error
from ..moto_nodegroup import ASG_NAME, CLUSTER, NODEGROUP, MotoNodegroup, raw_node, run_module_in_process

BASE = dict(cluster_name=CLUSTER, nodegroup_name=NODEGROUP, kubeconfig="/unused")


def registered_nodes(world, unschedulable=(), extra_nodes=()):
    """A FakeCoreV1 listing the nodes of the ASG's instances, as their kubelets register them (with the labels the
    group's kind gives them, SPEC K1), and ``extra_nodes``."""
    return FakeCoreV1(world.raw_nodes(unschedulable=unschedulable) + list(extra_nodes))


@pytest.fixture
def world():
    with mock_aws():
        yield MotoNodegroup(desired=4)


@pytest.fixture
def run(capsys):
    def run_it(core_v1, **args):
        with mock.patch.object(EksopsModule, "core_v1", lambda self: core_v1):
            return run_module_in_process(nodegroup_info.main, dict(BASE, **args), capsys)
    return run_it


def test_describes_the_group_and_plans_a_rolling_upgrade(world, run):
    """U1/U2: default target is the ASG's version, so every instance is new and nothing is planned."""
    core_v1 = registered_nodes(world)
    result = run(core_v1, seed=5)
    assert result["changed"] is False, result
    group = result["nodegroup"]
    assert group["asg_name"] == ASG_NAME
    assert (group["asg"]["min_size"], group["asg"]["max_size"], group["asg"]["desired_capacity"]) == (0, 12, 4)
    assert group["asg"]["launch_template"]["version"] == "1"
    assert group["launch_template"]["target_version"] == 1
    assert group["launch_template"]["target_image_id"] == world.old_ami
    assert len(group["instances"]) == 4 and all(i["node_name"] and i["ready"] for i in group["instances"])
    assert group["old_instances"] == [] and len(group["new_instances"]) == 4
    assert group["plan"]["batches"] == [] and group["journal"] is None
    # K1: a terraform-aws-eks group; its nodes carry no node-group label, so every node is listed (K2)
    assert (group["kind"], group["node_selector"], group["managed"]) == ("self_managed", None, None)
    assert core_v1.calls == [None]
    assert all(i["launch_time"] and i["launch_time"].endswith("Z") for i in group["instances"])


def test_a_server_error_on_the_node_list_is_retried(world, run):
    """P3: a LIST is idempotent, so one 500 (as injected in the fault soak) is retried, not fatal."""
    core_v1 = registered_nodes(world)
    core_v1.store.faults["list"].append(api_error(500))
    clock = FakeClock()
    with mock.patch.object(clocks, "SYSTEM_CLOCK", clock):
        result = run(core_v1, target=world.new_ami, seed=5)
    assert not result.get("failed"), result
    assert len(result["nodegroup"]["old_instances"]) == 4
    assert all(i["node_name"] for i in result["nodegroup"]["instances"])
    assert core_v1.calls == [None] * 2 and len(clock.sleeps) == 1


def test_target_image_splits_old_from_new_and_batches_the_old(world, run):
    """U5: every old instance in exactly one batch of at most max_unavailable."""
    core_v1 = registered_nodes(world)
    result = run(core_v1, target=world.new_ami, max_unavailable=3, seed=11)
    group = result["nodegroup"]
    all_ids = sorted(i["instance_id"] for i in group["instances"])
    assert sorted(group["old_instances"]) == all_ids and group["new_instances"] == []
    plan = group["plan"]
    assert (plan["strategy"], plan["max_unavailable"], plan["seed"]) == ("rolling", 3, 11)
    assert plan["surge"] == max(2 * len(group["asg"]["availability_zones"]), 3)
    assert sorted(i for batch in plan["batches"] for i in batch) == all_ids
    assert [len(batch) for batch in plan["batches"]] == [3, 1]
    assert run(core_v1, target=world.new_ami, max_unavailable=3, seed=11)["nodegroup"]["plan"] == plan
    assert sum(az["old"] for az in group["azs"]) == 4


def test_target_launch_template_version(world, run):
    version = world.add_version(ImageId=world.new_ami)
    group = run(registered_nodes(world), target=str(version))["nodegroup"]
    assert (group["launch_template"]["target_version"], group["launch_template"]["target_image_id"]) == (
        version, world.new_ami)
    assert len(group["old_instances"]) == 4


def test_surge_and_minimal_plans(world, run):
    core_v1 = registered_nodes(world)
    surge = run(core_v1, target=world.new_ami, max_surge=2, max_unavailable=1, seed=1)["nodegroup"]["plan"]
    assert (surge["strategy"], surge["batch_size"], surge["steps"][0]["desired_after_launch"]) == ("surge", 3, 6)
    minimal = run(core_v1, target=world.new_ami, update_strategy="minimal", seed=1)["nodegroup"]["plan"]
    assert (minimal["strategy"], minimal["surge"]) == ("minimal", 0)


def test_journal_and_cordoned_nodes_are_reported(world, run):
    first = world.asg()["Instances"][0]["InstanceId"]
    write_journal(world.autoscaling, world.asg_name, Journal(run_id="r9", phase="upgrade", surge=6))
    group = run(registered_nodes(world, unschedulable=[first]), target=world.new_ami, max_unavailable=2, seed=3)["nodegroup"]
    assert group["journal"]["run_id"] == "r9" and group["journal"]["surge"] == 6
    assert first in group["plan"]["batches"][0]
    assert [i["unschedulable"] for i in group["instances"] if i["instance_id"] == first] == [True]


def test_a_percentage_is_of_the_group_before_the_upgrade(capsys):
    """Issue 10 item 4: 50 % of a 5-node group is 3 nodes (rounded up), also with the group surged to 11 and the
    journal recording the 5 it had; never a percentage of the surged group."""
    with mock_aws():
        world = MotoNodegroup(desired=5)
        core_v1 = registered_nodes(world)
        with mock.patch.object(EksopsModule, "core_v1", lambda self: core_v1):
            before = run_module_in_process(nodegroup_info.main, dict(
                BASE, target=world.new_ami, max_unavailable_percentage=50, seed=1), capsys)["nodegroup"]["plan"]
            write_journal(world.autoscaling, world.asg_name,
                          Journal(run_id="r9", phase="upgrade", surge=6, original_desired_capacity=5))
            world.autoscaling.update_auto_scaling_group(AutoScalingGroupName=world.asg_name, DesiredCapacity=11)
            surged = run_module_in_process(nodegroup_info.main, dict(
                BASE, target=world.new_ami, max_unavailable_percentage=50, seed=1), capsys)["nodegroup"]["plan"]
    assert before["max_unavailable"] == 3 and before["batch_size"] == 3
    assert surged["node_count"] == 11 and surged["max_unavailable"] == 3 and surged["batch_size"] == 3


STRAY_ID = "i-0000000000000dead"


def stray(labels):
    return raw_node("gone", STRAY_ID, "us-west-2a", dict(labels, **{"kubernetes.io/hostname": "gone"}))


def test_a_labelled_node_whose_instance_left_the_group_is_an_orphan(capsys):
    """Only a kind that labels its nodes tells a node of the group without its instance (eksctl here)."""
    with mock_aws():
        world = MotoNodegroup(desired=2, kind=kinds.SELF_MANAGED_EKSCTL)
        core_v1 = registered_nodes(world, extra_nodes=[stray({"alpha.eksctl.io/nodegroup-name": NODEGROUP}),
                                                       raw_node("batch-1", "i-0000000000000b01", "us-west-2a",
                                                                {"alpha.eksctl.io/nodegroup-name": "batch"})])
        with mock.patch.object(EksopsModule, "core_v1", lambda self: core_v1):
            group = run_module_in_process(nodegroup_info.main, BASE, capsys)["nodegroup"]
    assert group["kind"] == kinds.SELF_MANAGED_EKSCTL
    assert group["node_selector"] == "alpha.eksctl.io/nodegroup-name=" + NODEGROUP
    assert group["orphan_nodes"] == ["gone"]
    assert core_v1.calls == ["alpha.eksctl.io/nodegroup-name=" + NODEGROUP]
    assert all(i["node_name"] for i in group["instances"])


def test_a_self_managed_group_has_no_orphans_to_tell(world, run):
    """No label marks a plain self-managed group's nodes: a node of no instance of the group is not its own."""
    group = run(registered_nodes(world, extra_nodes=[stray({})]))["nodegroup"]
    assert group["orphan_nodes"] == [] and STRAY_ID not in [i["instance_id"] for i in group["instances"]]


def test_a_managed_node_group_is_described_and_left_to_eks_to_plan(capsys):
    """K1/K3: the kind, EKS's record and the instances, but no plan (EKS plans a managed group's update)."""
    with mock_aws():
        world = MotoNodegroup(desired=2, kind=kinds.MANAGED)
        core_v1 = registered_nodes(world)
        with mock.patch.object(EksopsModule, "core_v1", lambda self: core_v1):
            result = run_module_in_process(nodegroup_info.main, dict(BASE, target=world.new_ami), capsys)
    assert not result.get("failed"), result
    group = result["nodegroup"]
    assert (group["kind"], group["asg_name"], group["plan"]) == (kinds.MANAGED, world.asg_name, None)
    assert group["node_selector"] == "eks.amazonaws.com/nodegroup=" + NODEGROUP
    assert core_v1.calls == ["eks.amazonaws.com/nodegroup=" + NODEGROUP]
    managed = group["managed"]
    assert managed["status"] == "ACTIVE" and managed["launch_template"] is None
    assert set(managed) == {"status", "version", "release_version", "ami_type", "launch_template", "update_config",
                            "health_issues", "scaling_config"}
    assert managed["scaling_config"]["desiredSize"] == 2
    assert len(group["old_instances"]) == 2 and all(i["node_name"] for i in group["instances"])


def test_managed_summary_of_a_custom_launch_template():
    record = {"status": "DEGRADED", "version": "1.30", "releaseVersion": "1.30.4-20240917", "amiType": "CUSTOM",
              "launchTemplate": {"id": "lt-1", "name": "mine", "version": "3"},
              "updateConfig": {"maxUnavailable": 1},
              "health": {"issues": [{"code": "Ec2LaunchTemplateVersionMismatch", "message": "m",
                                     "resourceIds": ["eks-workers"]}]},
              "scalingConfig": {"minSize": 1, "maxSize": 4, "desiredSize": 2}}
    summary = nodegroup_describe.managed_summary(record)
    assert summary["launch_template"] == dict(id="lt-1", name="mine", version="3")
    assert summary["health_issues"][0]["code"] == "Ec2LaunchTemplateVersionMismatch"
    assert (summary["release_version"], summary["ami_type"]) == ("1.30.4-20240917", "CUSTOM")
    assert nodegroup_describe.managed_summary(None) is None


@pytest.mark.parametrize("args, parameter", [
    (dict(target="99"), "target"),
    (dict(target="ami-00000000000000000"), "target"),
    (dict(asg_name="no-such-asg"), "asg_name"),
    (dict(nodegroup_name="nope"), "nodegroup_name"),
    (dict(cluster_name="nope"), "cluster_name"),
    (dict(max_unavailable=0), "max_unavailable"),
    (dict(max_surge=30), "max_surge"),
])
def test_bad_input_names_the_parameter(world, run, args, parameter):
    result = run(registered_nodes(world), **args)
    assert result["failed"] is True
    assert result["parameter"] == parameter, result


def test_exclusive_parallelism_options(world, run):
    result = run(registered_nodes(world), max_unavailable=1, max_unavailable_percentage=10)
    assert result["failed"] and "mutually exclusive" in result["msg"]


def test_documentation_matches_the_argument_spec():
    from ansible_collections.eksops.nodegroup.plugins.module_utils.host.module import merged_argument_spec

    from ..module_docs import assert_docs_match_spec

    assert_docs_match_spec(nodegroup_info,
                           merged_argument_spec(nodegroup_info.ARGUMENT_SPEC, uses_aws=True, uses_k8s=True))


def test_a_thousand_instances_take_a_fixed_handful_of_calls(capsys):
    """No per-instance calls: two ASG describes, EC2 describes in chunks of 200, one node LIST in pages of 500."""
    from ansible_collections.eksops.nodegroup.plugins.module_utils.aws import session as aws_utils

    calls = []
    real_aws_client = aws_utils.aws_client

    def counting_aws_client(params, service, session=None):
        client = real_aws_client(params, service, session=session)
        client.meta.events.register("before-call.*.*", lambda model, **_: calls.append(model.name))
        return client

    with mock_aws():
        world = MotoNodegroup(desired=1000)
        core_v1 = registered_nodes(world)
        with mock.patch.object(EksopsModule, "core_v1", lambda self: core_v1), \
                mock.patch.object(aws_utils, "aws_client", counting_aws_client):
            result = run_module_in_process(nodegroup_info.main, dict(BASE, target=world.new_ami,
                                                                     max_unavailable_percentage=10, seed=1), capsys)
    group = result["nodegroup"]
    assert len(group["instances"]) == 1000 and all(i["node_name"] for i in group["instances"])
    assert len(group["old_instances"]) == 1000
    assert [len(batch) for batch in group["plan"]["batches"]] == [100] * 10
    assert sorted(set(calls)) == ["DescribeAutoScalingGroups", "DescribeImages", "DescribeInstances",
                                  "DescribeLaunchTemplates", "DescribeNodegroup"]
    assert calls.count("DescribeInstances") == 5
    # discovery (K1): DescribeNodegroup, then one describe filtered by eksctl's tags and one by the cluster tag
    assert calls.count("DescribeAutoScalingGroups") == 2 and calls.count("DescribeNodegroup") == 1
    assert len(core_v1.calls) == 2


@pytest.fixture
def launched_versions(monkeypatch):
    """{instance id: the launch template version it was launched from}, as AWS reports it on the group's instances
    (moto reports the template's default version for every instance)."""
    from moto.autoscaling.models import InstanceState

    versions = {}
    reported = InstanceState.launch_template.fget

    def launch_template(self):
        spec = reported(self)
        return dict(spec, Version=versions.get(self.instance_id, spec["Version"]))
    monkeypatch.setattr(InstanceState, "launch_template", property(launch_template))
    return versions


def test_issue29_a_launch_template_version_set_back_by_hand_mid_upgrade_is_judged_against_the_journal(
        world, run, launched_versions):
    """Issue 29 item 4: the group was pointed back at version 1 during an upgrade to version 2. Without a target,
    new means the journal's target: the instances already on version 2 stay new, those on 1 are old (before, the
    upgraded nodes counted as old, so a rerun replaced them again)."""
    # no UserData: in-process moto keeps it as a plain str for new versions and then refuses to launch (asg_world)
    version = world.ec2.create_launch_template_version(LaunchTemplateId=world.lt_id, LaunchTemplateData=dict(
        ImageId=world.new_ami, InstanceType="m5.large"))["LaunchTemplateVersion"]["VersionNumber"]
    old = sorted(i["InstanceId"] for i in world.asg()["Instances"])
    world.autoscaling.update_auto_scaling_group(
        AutoScalingGroupName=world.asg_name, DesiredCapacity=6,
        LaunchTemplate=dict(LaunchTemplateId=world.lt_id, Version=str(version)))
    upgraded = sorted(set(i["InstanceId"] for i in world.asg()["Instances"]) - set(old))
    assert len(upgraded) == 2
    launched_versions.update([(i, "1") for i in old] + [(i, str(version)) for i in upgraded])
    world.autoscaling.update_auto_scaling_group(AutoScalingGroupName=world.asg_name, LaunchTemplate=dict(
        LaunchTemplateId=world.lt_id, Version="1"))
    write_journal(world.autoscaling, world.asg_name, Journal(
        run_id="r9", phase="upgrade", launch_template_id=world.lt_id, target_launch_template_version=str(version),
        target_image_id=world.new_ami))
    group = run(registered_nodes(world), seed=3)["nodegroup"]
    assert group["launch_template"]["target_version"] == version
    assert (sorted(group["old_instances"]), sorted(group["new_instances"])) == (old, upgraded)
