# -*- coding: utf-8 -*-
# Copyright: Contributors to the eksops.nodegroup project
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Contract (boto3, botocore's models): instance refreshes and what a node group's infrastructure as code does when it
applies, as the sandbox plays them (moto_patches (m), aws/instance_refresh.py, aws/owners.py; SPEC W1, W2).

Expected behaviour, from AWS's documentation and the tools' sources rather than from what the collection expects:
- Amazon EC2 Auto Scaling User Guide, "Use an instance refresh to update instances": a Rolling refresh replaces the
  group's instances in batches that keep MinHealthyPercentage (default 90) of the desired capacity healthy, "one
  instance at a time" at 100 %; "Check the status of an instance refresh": Pending, InProgress, then Successful,
  Failed, Cancelled, ...; API reference: StartInstanceRefresh fails with InstanceRefreshInProgress while one is
  active, CancelInstanceRefresh with ActiveInstanceRefreshNotFound when none is.
- "Suspend and resume Amazon EC2 Auto Scaling processes": suspending InstanceRefresh "pauses the operation without
  canceling it".
- terraform-aws-eks modules/self-managed-node-group/main.tf: the launch template renders the code's AMI and becomes
  the default version (update_default_version = true), the group follows the default version, and a change of the
  group's launch template starts the module's default instance refresh (Rolling, min_healthy_percentage 66).
- amazon-eks-nodegroup.yaml: a stack update with a new NodeImageId makes a new version and moves the group to
  LatestVersionNumber with AutoScalingRollingUpdate (MaxBatchSize 1); an update that changes nothing in the stack
  touches nothing.
"""

from __future__ import annotations

import time

import pytest
from botocore.exceptions import ClientError

from eks_sandbox.scenario.loader import load_scenario

from harness import asg, aws_running, describe_group, seeded_aws, tick_until, valid

TIMINGS = {"instance_pending_seconds": 0.05, "instance_shutdown_seconds": 0.05}
OLD, NEW = "eks-node-1.29-v1", "eks-node-1.30-v1"


def scenario(convention="terraform", kind="self_managed"):
    return load_scenario({
        "name": "refresh", "timings": TIMINGS,
        "amis": [{"name": OLD, "kubernetes_version": "1.29"}, {"name": NEW, "kubernetes_version": "1.30"}],
        "nodegroups": [dict({"name": "workers", "ami": OLD, "min_size": 1, "max_size": 12, "desired_capacity": 4,
                             "kind": kind}, **({"convention": convention} if kind == "self_managed" else {}))],
    })


def started_sim(convention="terraform", kind="self_managed"):
    return seeded_aws(scenario(convention=convention, kind=kind))


@pytest.fixture
def sim():
    with aws_running(scenario()) as started:
        yield started


def refreshes(sim):
    autoscaling = sim.client("autoscaling")
    return valid(autoscaling, "DescribeInstanceRefreshes", autoscaling.describe_instance_refreshes(
        AutoScalingGroupName=asg(sim)))["InstanceRefreshes"]


def in_service_ids(sim):
    return {i["InstanceId"] for i in describe_group(sim)["Instances"] if i["LifecycleState"] == "InService"}


def error_code(excinfo):
    return excinfo.value.response["Error"]["Code"]


def test_a_rolling_refresh_replaces_every_instance_keeping_the_minimum_healthy(sim):
    before = in_service_ids(sim)
    autoscaling = sim.client("autoscaling")
    started = valid(autoscaling, "StartInstanceRefresh", autoscaling.start_instance_refresh(
        AutoScalingGroupName=asg(sim), Preferences={"MinHealthyPercentage": 50}))
    assert refreshes(sim)[0]["InstanceRefreshId"] == started["InstanceRefreshId"]
    assert refreshes(sim)[0]["Status"] == "Pending"
    lowest = []
    tick_until(sim, lambda: refreshes(sim)[0]["Status"] == "Successful",
               watch=lambda: lowest.append(len(in_service_ids(sim))))
    assert not before & in_service_ids(sim) and len(in_service_ids(sim)) == 4
    assert min(lowest) >= 2  # 50 % of 4 stayed in service throughout
    assert refreshes(sim)[0]["PercentageComplete"] == 100 and "EndTime" in refreshes(sim)[0]


def test_a_second_refresh_is_refused_while_one_is_active_and_cancel_needs_one(sim):
    autoscaling = sim.client("autoscaling")
    with pytest.raises(ClientError) as excinfo:
        autoscaling.cancel_instance_refresh(AutoScalingGroupName=asg(sim))
    assert error_code(excinfo) == "ActiveInstanceRefreshNotFound"
    autoscaling.start_instance_refresh(AutoScalingGroupName=asg(sim))
    with pytest.raises(ClientError) as excinfo:
        autoscaling.start_instance_refresh(AutoScalingGroupName=asg(sim))
    assert error_code(excinfo) == "InstanceRefreshInProgress"
    autoscaling.cancel_instance_refresh(AutoScalingGroupName=asg(sim))
    assert refreshes(sim)[0]["Status"] == "Cancelling"
    tick_until(sim, lambda: refreshes(sim)[0]["Status"] == "Cancelled")


def test_suspending_instance_refresh_pauses_it_without_cancelling(sim):
    before = in_service_ids(sim)
    autoscaling = sim.client("autoscaling")
    autoscaling.suspend_processes(AutoScalingGroupName=asg(sim), ScalingProcesses=["InstanceRefresh"])
    autoscaling.start_instance_refresh(AutoScalingGroupName=asg(sim))
    for _tick in range(20):
        sim.tick()
        time.sleep(0.01)
    assert refreshes(sim)[0]["Status"] == "InProgress" and in_service_ids(sim) == before
    autoscaling.resume_processes(AutoScalingGroupName=asg(sim), ScalingProcesses=["InstanceRefresh"])
    tick_until(sim, lambda: refreshes(sim)[0]["Status"] == "Successful")
    assert not before & in_service_ids(sim)


def test_out_of_range_preferences_are_refused(sim):
    with pytest.raises(ClientError) as excinfo:
        sim.client("autoscaling").start_instance_refresh(AutoScalingGroupName=asg(sim),
                                                         Preferences={"MinHealthyPercentage": 120})
    assert error_code(excinfo) == "ValidationError"


def images(sim):
    ids = [i["InstanceId"] for i in describe_group(sim)["Instances"] if i["LifecycleState"] == "InService"]
    described = sim.client("ec2").describe_instances(InstanceIds=ids)["Reservations"]
    return sorted(i["ImageId"] for r in described for i in r["Instances"])


def test_terraform_apply_with_a_new_ami_makes_the_default_version_and_refreshes(sim):
    done = sim.apply_owner("workers", ami=NEW)
    assert any("instance refresh" in line for line in done)
    template = describe_group(sim)["LaunchTemplate"]
    assert template["Version"] == "2"
    described = sim.client("ec2").describe_launch_templates(LaunchTemplateIds=[template["LaunchTemplateId"]])
    assert described["LaunchTemplates"][0]["DefaultVersionNumber"] == 2
    assert refreshes(sim)[0]["Preferences"]["MinHealthyPercentage"] == 66
    tick_until(sim, lambda: refreshes(sim)[0]["Status"] == "Successful")
    assert images(sim) == [sim.ami_id(NEW)] * 4


def test_terraform_apply_reverts_a_version_pinned_behind_its_back(sim):
    """W1: a version made outside terraform (the new AMI) and pinned: the next apply makes a version with the code's
    AMI, points the group at it, and its refresh replaces every node."""
    autoscaling, ec2 = sim.client("autoscaling"), sim.client("ec2")
    template_id = describe_group(sim)["LaunchTemplate"]["LaunchTemplateId"]
    ec2.create_launch_template_version(LaunchTemplateId=template_id, SourceVersion="1",
                                       LaunchTemplateData={"ImageId": sim.ami_id(NEW)})
    autoscaling.update_auto_scaling_group(AutoScalingGroupName=asg(sim),
                                          LaunchTemplate={"LaunchTemplateId": template_id, "Version": "2"})
    done = sim.apply_owner("workers")
    assert describe_group(sim)["LaunchTemplate"]["Version"] == "3"
    assert any("instance refresh" in line for line in done)
    version = ec2.describe_launch_template_versions(LaunchTemplateId=template_id, Versions=["3"])
    assert version["LaunchTemplateVersions"][0]["LaunchTemplateData"]["ImageId"] == sim.ami_id(OLD)


def test_terraform_apply_with_the_refresh_off_changes_the_template_only_and_then_nothing(sim):
    done = sim.apply_owner("workers", ami=NEW, instance_refresh=False)
    assert not any("instance refresh" in line for line in done) and describe_group(sim)["LaunchTemplate"]["Version"] == "2"
    assert refreshes(sim) == []
    assert sim.apply_owner("workers", instance_refresh=True) == []  # the code is what AWS has: nothing to do


def test_a_stack_update_replaces_one_at_a_time_and_an_unchanged_stack_nothing():
    sim = started_sim(convention="cloudformation")
    try:
        assert sim.apply_owner("workers") == []
        before = in_service_ids(sim)
        done = sim.apply_owner("workers", ami=NEW)
        assert describe_group(sim)["LaunchTemplate"]["Version"] == "2" and any("rolling update" in line for line in done)
        assert refreshes(sim) == []  # a stack's rolling update is not an instance refresh
        lowest = []
        tick_until(sim, lambda: images(sim) == [sim.ami_id(NEW)] * 4,
                   watch=lambda: lowest.append(len(in_service_ids(sim))))
        assert min(lowest) >= 3 and not before & in_service_ids(sim)
    finally:
        sim.stop()


def test_a_stack_update_without_the_rolling_update_policy_only_moves_the_group():
    sim = started_sim(convention="cloudformation")
    try:
        before = in_service_ids(sim)
        done = sim.apply_owner("workers", ami=NEW, instance_refresh=False)
        assert describe_group(sim)["LaunchTemplate"]["Version"] == "2" and not any("rolling" in line for line in done)
        for _tick in range(20):
            sim.tick()
            time.sleep(0.01)
        assert in_service_ids(sim) == before
    finally:
        sim.stop()


def test_an_eksctl_group_has_no_apply():
    sim = started_sim(kind="self_managed_eksctl")
    try:
        with pytest.raises(ValueError, match="no infrastructure-as-code owner"):
            sim.apply_owner("workers", ami=NEW)
    finally:
        sim.stop()


def test_a_warm_pool_is_kept_and_described_as_the_api_reference_says(sim):
    """Warm pools (moto's own PutWarmPool / DescribeWarmPool / DeleteWarmPool): the configuration is kept and answered
    in botocore's shapes. Their instances are not modelled (moto launches none): the collection refuses a group with a
    warm pool before any change, which this configuration is enough to show."""
    autoscaling = sim.client("autoscaling")
    assert valid(autoscaling, "DescribeWarmPool", autoscaling.describe_warm_pool(
        AutoScalingGroupName=asg(sim))).get("WarmPoolConfiguration") is None
    autoscaling.put_warm_pool(AutoScalingGroupName=asg(sim), MinSize=2, PoolState="Stopped")
    described = valid(autoscaling, "DescribeWarmPool", autoscaling.describe_warm_pool(AutoScalingGroupName=asg(sim)))
    assert described["WarmPoolConfiguration"]["MinSize"] == 2 and described["WarmPoolConfiguration"]["PoolState"] \
        == "Stopped"
    autoscaling.delete_warm_pool(AutoScalingGroupName=asg(sim), ForceDelete=True)
    assert autoscaling.describe_warm_pool(AutoScalingGroupName=asg(sim)).get("WarmPoolConfiguration") is None
