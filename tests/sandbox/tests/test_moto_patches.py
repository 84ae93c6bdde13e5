# -*- coding: utf-8 -*-
# Copyright: Contributors to the eksops.nodegroup project
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Each moto correction (eks_sandbox/aws/moto_patches.py, (a)-(g)) on its own, through boto3 against a started
AwsSim, plus the moto version guard."""

from __future__ import annotations

import base64
import time
from collections import Counter

import moto
import pytest
from botocore.exceptions import ClientError

from eks_sandbox.aws import AwsSim
from eks_sandbox.aws.moto_patches import MotoVersionError, apply_moto_corrections, check_moto_version
from eks_sandbox.faults import Faults
from eks_sandbox.recorder import Recorder
from eks_sandbox.scenario.loader import load_scenario

OLD_AMI, NEW_AMI = "ami-0a1b2c3d4e5f60001", "ami-0a1b2c3d4e5f60002"
ZONES = ["us-west-2a", "us-west-2b", "us-west-2c"]
TIMINGS = {"instance_pending_seconds": 0.05, "instance_shutdown_seconds": 0.05}


@pytest.fixture
def sim():
    scenario = load_scenario({
        "name": "patches", "timings": TIMINGS,
        "amis": [{"name": "eks-node-1.29-v1", "id": OLD_AMI, "kubernetes_version": "1.29"},
                 {"name": "eks-node-1.30-v1", "id": NEW_AMI, "kubernetes_version": "1.30"}],
        "nodegroups": [{"name": "workers", "ami": "eks-node-1.29-v1", "min_size": 3, "max_size": 12,
                        "desired_capacity": 6}],
    })
    with AwsSim(scenario, Recorder(), Faults([]), launch_retry_seconds=0.05) as started:
        started.seed("https://127.0.0.1:6443", None)
        yield started


def asg(sim):
    """The node group's Auto Scaling group name (terraform-aws-eks's "<name>-<timestamp>", the default kind)."""
    return sim.asg_view("workers")["name"]


def describe_group(sim):
    return sim.client("autoscaling").describe_auto_scaling_groups(
        AutoScalingGroupNames=[asg(sim)])["AutoScalingGroups"][0]


def live_instances(sim):
    return [i for i in describe_group(sim)["Instances"] if i["LifecycleState"] in ("Pending", "InService")]


def zone_counts(instances):
    return Counter(i["AvailabilityZone"] for i in instances)


def tick_until(sim, condition, timeout=3.0):
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        sim.tick()
        if condition():
            return
        time.sleep(0.01)
    raise AssertionError("condition not reached in time")


def error_of(excinfo):
    return excinfo.value.response["Error"]["Code"], excinfo.value.response["Error"]["Message"]


# ------------------------------------------------------------------------------------------------ guard

def test_corrections_refuse_another_moto_version(monkeypatch):
    monkeypatch.setattr(moto, "__version__", "5.2.6")
    with pytest.raises(MotoVersionError, match="pinned to moto 5.2.5, but moto 5.2.6"):
        check_moto_version()
    with pytest.raises(MotoVersionError):
        apply_moto_corrections()


# ------------------------------------------------------------------------------------------------ (a)

def test_a_launches_spread_evenly_over_the_groups_azs(sim):
    """U2: instances land in every AZ of the group, balanced; moto would put all in the first subnet."""
    assert zone_counts(live_instances(sim)) == {zone: 2 for zone in ZONES}
    sim.client("autoscaling").set_desired_capacity(AutoScalingGroupName=asg(sim), DesiredCapacity=11)
    assert len(live_instances(sim)) == 6, "the API call itself launches nothing; the ASG does, on its tick"
    sim.tick()
    counts = zone_counts(live_instances(sim))
    assert sum(counts.values()) == 11
    assert max(counts.values()) - min(counts.values()) <= 1


def test_a_scale_in_terminates_from_the_az_with_most_instances(sim):
    autoscaling = sim.client("autoscaling")
    in_a = [i["InstanceId"] for i in live_instances(sim) if i["AvailabilityZone"] == "us-west-2a"]
    for instance_id in in_a:
        autoscaling.terminate_instance_in_auto_scaling_group(InstanceId=instance_id,
                                                             ShouldDecrementDesiredCapacity=True)
    assert zone_counts(live_instances(sim)) == {"us-west-2b": 2, "us-west-2c": 2}
    autoscaling.set_desired_capacity(AutoScalingGroupName=asg(sim), DesiredCapacity=3)
    sim.tick()
    counts = zone_counts(live_instances(sim))
    assert sum(counts.values()) == 3
    assert sorted(counts.values()) == [1, 2] and "us-west-2a" not in counts


def launch_version_2_of(sim, image_id, desired):
    """A version 2 of the group's template with ``image_id``, the group pointed at it and sized to ``desired``."""
    autoscaling, ec2 = sim.client("autoscaling"), sim.client("ec2")
    template_id = describe_group(sim)["LaunchTemplate"]["LaunchTemplateId"]
    ec2.create_launch_template_version(LaunchTemplateId=template_id, SourceVersion="1",
                                       LaunchTemplateData={"ImageId": image_id})
    autoscaling.update_auto_scaling_group(AutoScalingGroupName=asg(sim), DesiredCapacity=desired,
                                          LaunchTemplate={"LaunchTemplateId": template_id, "Version": "2"})


def test_a_scale_in_prefers_instances_of_an_older_launch_template_version(sim):
    autoscaling = sim.client("autoscaling")
    launch_version_2_of(sim, NEW_AMI, 9)
    sim.tick()
    autoscaling.set_desired_capacity(AutoScalingGroupName=asg(sim), DesiredCapacity=6)
    sim.tick()
    versions = Counter(i["LaunchTemplate"]["Version"] for i in live_instances(sim))
    assert versions == {"1": 3, "2": 3}, "one old instance per AZ went, not the new ones"


def test_a_deleting_a_group_terminates_its_instances(sim):
    ids = [i["InstanceId"] for i in live_instances(sim)]
    sim.client("autoscaling").delete_auto_scaling_group(AutoScalingGroupName=asg(sim), ForceDelete=True)
    states = {i["InstanceId"]: i["State"]["Name"] for r in sim.client("ec2").describe_instances(
        InstanceIds=ids)["Reservations"] for i in r["Instances"]}
    assert set(states.values()) == {"shutting-down"}


# ------------------------------------------------------------------------------------------------ (b)

@pytest.mark.parametrize("call, message", [
    ({"DesiredCapacity": 20}, "Desired capacity:20 must be between the specified min size:3 and max size:12"),
    ({"MinSize": 5, "MaxSize": 4}, "Max bound, 4, must be greater than or equal to min bound, 5"),
    ({"MaxSize": 5, "DesiredCapacity": 6}, "Desired capacity:6 must be between the specified min size:3 and max size:5"),
])
def test_b_update_auto_scaling_group_validates_sizes(sim, call, message):
    with pytest.raises(ClientError) as excinfo:
        sim.client("autoscaling").update_auto_scaling_group(AutoScalingGroupName=asg(sim), **call)
    assert error_of(excinfo) == ("ValidationError", message)
    group = describe_group(sim)
    assert (group["MinSize"], group["MaxSize"], group["DesiredCapacity"]) == (3, 12, 6)


@pytest.mark.parametrize("desired, message", [
    (13, "New SetDesiredCapacity value 13 is above max value 12 for the AutoScalingGroup."),
    (2, "New SetDesiredCapacity value 2 is below min value 3 for the AutoScalingGroup."),
])
def test_b_set_desired_capacity_validates_against_min_and_max(sim, desired, message):
    with pytest.raises(ClientError) as excinfo:
        sim.client("autoscaling").set_desired_capacity(AutoScalingGroupName=asg(sim), DesiredCapacity=desired)
    assert error_of(excinfo) == ("ValidationError", message)
    assert describe_group(sim)["DesiredCapacity"] == 6


def test_b_moving_a_bound_past_desired_drags_desired_along(sim):
    autoscaling = sim.client("autoscaling")
    autoscaling.update_auto_scaling_group(AutoScalingGroupName=asg(sim), MinSize=8)
    assert describe_group(sim)["DesiredCapacity"] == 8
    autoscaling.update_auto_scaling_group(AutoScalingGroupName=asg(sim), MinSize=1, MaxSize=4)
    group = describe_group(sim)
    assert (group["MinSize"], group["MaxSize"], group["DesiredCapacity"]) == (1, 4, 4)


# ------------------------------------------------------------------------------------------------ (c)

def test_c_source_version_inherits_data_overlaid_by_the_given_data(sim):
    """U1: a new LT version made from the one the ASG uses keeps everything but the AMI."""
    ec2 = sim.client("ec2")
    template_id = describe_group(sim)["LaunchTemplate"]["LaunchTemplateId"]
    created = ec2.create_launch_template_version(LaunchTemplateId=template_id, SourceVersion="1",
                                                 LaunchTemplateData={"ImageId": NEW_AMI})
    assert created["LaunchTemplateVersion"]["VersionNumber"] == 2
    source, new = (ec2.describe_launch_template_versions(LaunchTemplateId=template_id, Versions=[v])
                   ["LaunchTemplateVersions"][0]["LaunchTemplateData"] for v in ("1", "2"))
    assert new["ImageId"] == NEW_AMI
    inherited = {k: v for k, v in new.items() if k != "ImageId"}
    assert inherited == {k: v for k, v in source.items() if k != "ImageId"}
    assert new["InstanceType"] == "m5.large" and new["UserData"] and new["MetadataOptions"]


def test_c_without_source_version_only_the_given_data_is_kept(sim):
    ec2 = sim.client("ec2")
    template_id = describe_group(sim)["LaunchTemplate"]["LaunchTemplateId"]
    user_data = base64.b64encode(b"#!/bin/bash\necho hi\n").decode()
    ec2.create_launch_template_version(LaunchTemplateId=template_id,
                                       LaunchTemplateData={"ImageId": NEW_AMI, "UserData": user_data})
    data = ec2.describe_launch_template_versions(LaunchTemplateId=template_id, Versions=["2"])[
        "LaunchTemplateVersions"][0]["LaunchTemplateData"]
    assert data["ImageId"] == NEW_AMI and data["UserData"] == user_data
    assert "InstanceType" not in data


# ------------------------------------------------------------------------------------------------ (d)

def test_d_instances_report_the_version_they_were_launched_from(sim):
    autoscaling, ec2 = sim.client("autoscaling"), sim.client("ec2")
    template_id = describe_group(sim)["LaunchTemplate"]["LaunchTemplateId"]
    ec2.create_launch_template_version(LaunchTemplateId=template_id, SourceVersion="1",
                                       LaunchTemplateData={"ImageId": NEW_AMI})
    autoscaling.update_auto_scaling_group(AutoScalingGroupName=asg(sim), DesiredCapacity=7,
                                          LaunchTemplate={"LaunchTemplateId": template_id, "Version": "$Latest"})
    sim.tick()
    by_version = {}
    for instance in describe_group(sim)["Instances"]:
        by_version.setdefault(instance["LaunchTemplate"]["Version"], []).append(instance["InstanceId"])
    assert {v: len(ids) for v, ids in by_version.items()} == {"1": 6, "2": 1}, "$Latest resolved to 2 at launch"
    images = {i["InstanceId"]: i["ImageId"] for r in ec2.describe_instances()["Reservations"] for i in r["Instances"]}
    assert {images[i] for i in by_version["1"]} == {OLD_AMI}
    assert images[by_version["2"][0]] == NEW_AMI
    reported = autoscaling.describe_auto_scaling_instances(InstanceIds=by_version["2"])["AutoScalingInstances"]
    assert reported[0]["LaunchTemplate"]["Version"] == "2"
    assert {i["launch_template_version"] for i in sim.instances() if i["image_id"] == NEW_AMI} == {2}


# ------------------------------------------------------------------------------------------------ (e)

def test_e_suspended_processes_are_recorded_in_order_with_a_reason(sim):
    autoscaling = sim.client("autoscaling")
    autoscaling.suspend_processes(AutoScalingGroupName=asg(sim), ScalingProcesses=["AZRebalance", "ReplaceUnhealthy"])
    autoscaling.suspend_processes(AutoScalingGroupName=asg(sim), ScalingProcesses=["AlarmNotification", "AZRebalance"])
    suspended = describe_group(sim)["SuspendedProcesses"]
    assert [p["ProcessName"] for p in suspended] == ["AZRebalance", "ReplaceUnhealthy", "AlarmNotification"]
    assert all(p["SuspensionReason"].startswith("User suspended at ") for p in suspended)
    autoscaling.resume_processes(AutoScalingGroupName=asg(sim), ScalingProcesses=["ReplaceUnhealthy"])
    assert [p["ProcessName"] for p in describe_group(sim)["SuspendedProcesses"]] == ["AZRebalance",
                                                                                     "AlarmNotification"]
    assert sim.asg_view("workers")["suspended_processes"] == ["AZRebalance", "AlarmNotification"]
    autoscaling.resume_processes(AutoScalingGroupName=asg(sim))
    assert describe_group(sim)["SuspendedProcesses"] == []


def test_e_unknown_process_names_are_refused(sim):
    with pytest.raises(ClientError) as excinfo:
        sim.client("autoscaling").suspend_processes(AutoScalingGroupName=asg(sim), ScalingProcesses=["Lunch"])
    assert error_of(excinfo)[0] == "ValidationError"


def test_e_launch_suspended_launches_nothing_until_resumed(sim):
    autoscaling = sim.client("autoscaling")
    autoscaling.suspend_processes(AutoScalingGroupName=asg(sim), ScalingProcesses=["Launch"])
    autoscaling.set_desired_capacity(AutoScalingGroupName=asg(sim), DesiredCapacity=8)
    sim.tick()
    assert len(live_instances(sim)) == 6
    autoscaling.resume_processes(AutoScalingGroupName=asg(sim), ScalingProcesses=["Launch"])
    sim.tick()
    assert len(live_instances(sim)) == 8


def test_e_terminate_suspended_means_no_scale_in(sim):
    autoscaling = sim.client("autoscaling")
    autoscaling.suspend_processes(AutoScalingGroupName=asg(sim), ScalingProcesses=["Terminate"])
    autoscaling.set_desired_capacity(AutoScalingGroupName=asg(sim), DesiredCapacity=3)
    sim.tick()
    assert len(live_instances(sim)) == 6
    autoscaling.resume_processes(AutoScalingGroupName=asg(sim), ScalingProcesses=["Terminate"])
    sim.tick()
    assert len(live_instances(sim)) == 3


# ------------------------------------------------------------------------------------------------ (f)

def test_f_scaling_activities_describe_launches_with_aws_cause_and_status(sim):
    autoscaling = sim.client("autoscaling")
    seeded = autoscaling.describe_scaling_activities(AutoScalingGroupName=asg(sim))["Activities"]
    assert len(seeded) == 6 and {a["StatusCode"] for a in seeded} == {"Successful"}
    autoscaling.set_desired_capacity(AutoScalingGroupName=asg(sim), DesiredCapacity=7)
    sim.tick()
    newest = autoscaling.describe_scaling_activities(AutoScalingGroupName=asg(sim), MaxRecords=1)
    activity = newest["Activities"][0]
    new_id = next(i["InstanceId"] for i in describe_group(sim)["Instances"] if i["LifecycleState"] == "Pending")
    assert activity["Description"] == f"Launching a new EC2 instance: {new_id}"
    assert activity["StatusCode"] == "InProgress" and "EndTime" not in activity
    assert "a user request explicitly set group desired capacity changing the desired capacity from 6 to 7." \
        in activity["Cause"]
    assert activity["Cause"].endswith("an instance was started in response to a difference between desired and "
                                      "actual capacity, increasing the capacity from 6 to 7.")
    assert newest["NextToken"]
    tick_until(sim, lambda: autoscaling.describe_scaling_activities(
        ActivityIds=[activity["ActivityId"]])["Activities"][0]["StatusCode"] == "Successful")
    finished = autoscaling.describe_scaling_activities(ActivityIds=[activity["ActivityId"]])["Activities"][0]
    assert finished["EndTime"] >= finished["StartTime"] and finished["Progress"] == 100


def test_f_scale_in_activities_name_the_terminated_instance(sim):
    autoscaling = sim.client("autoscaling")
    autoscaling.set_desired_capacity(AutoScalingGroupName=asg(sim), DesiredCapacity=5)
    sim.tick()
    activity = autoscaling.describe_scaling_activities(AutoScalingGroupName=asg(sim))["Activities"][0]
    gone = next(i["InstanceId"] for i in describe_group(sim)["Instances"] if i["LifecycleState"] == "Terminating")
    assert activity["Description"] == f"Terminating EC2 instance: {gone}"
    assert activity["Cause"].endswith("shrinking the capacity from 6 to 5.")


def test_f_activities_page_with_next_token(sim):
    autoscaling = sim.client("autoscaling")
    first = autoscaling.describe_scaling_activities(AutoScalingGroupName=asg(sim), MaxRecords=4)
    second = autoscaling.describe_scaling_activities(AutoScalingGroupName=asg(sim), MaxRecords=4,
                                                     NextToken=first["NextToken"])
    ids = [a["ActivityId"] for a in first["Activities"] + second["Activities"]]
    assert len(ids) == len(set(ids)) == 6 and "NextToken" not in second


# ------------------------------------------------------------------------------------------------ (g)

def ec2_state(sim, instance_id):
    return sim.client("ec2").describe_instances(InstanceIds=[instance_id])["Reservations"][0]["Instances"][0][
        "State"]["Name"]


def test_g_launched_instances_are_pending_then_running(sim):
    sim.client("autoscaling").set_desired_capacity(AutoScalingGroupName=asg(sim), DesiredCapacity=7)
    sim.tick()
    new = next(i for i in describe_group(sim)["Instances"] if i["LifecycleState"] == "Pending")
    assert ec2_state(sim, new["InstanceId"]) == "pending"
    tick_until(sim, lambda: ec2_state(sim, new["InstanceId"]) == "running")
    assert next(i for i in describe_group(sim)["Instances"] if i["InstanceId"] == new["InstanceId"])[
        "LifecycleState"] == "InService"


def test_g_terminate_without_decrement_shuts_down_and_is_replaced_in_the_same_az(sim):
    autoscaling = sim.client("autoscaling")
    victim = live_instances(sim)[0]
    answer = autoscaling.terminate_instance_in_auto_scaling_group(InstanceId=victim["InstanceId"],
                                                                  ShouldDecrementDesiredCapacity=False)
    assert answer["Activity"]["Description"] == f"Terminating EC2 instance: {victim['InstanceId']}"
    assert answer["Activity"]["Cause"].endswith("was taken out of service in response to a user request.")
    assert ec2_state(sim, victim["InstanceId"]) == "shutting-down"
    sim.tick()
    group = describe_group(sim)
    assert group["DesiredCapacity"] == 6
    replacement = next(i for i in group["Instances"] if i["LifecycleState"] == "Pending")
    assert replacement["AvailabilityZone"] == victim["AvailabilityZone"]
    tick_until(sim, lambda: ec2_state(sim, victim["InstanceId"]) == "terminated")
    assert victim["InstanceId"] not in {i["InstanceId"] for i in describe_group(sim)["Instances"]}
    gone = next(i for i in sim.instances() if i["instance_id"] == victim["InstanceId"])
    assert gone["state"] == "terminated", "terminated instances stay visible to the Kubernetes side"


def test_g_terminate_with_decrement_shrinks_the_group(sim):
    autoscaling = sim.client("autoscaling")
    victim = live_instances(sim)[0]["InstanceId"]
    answer = autoscaling.terminate_instance_in_auto_scaling_group(InstanceId=victim,
                                                                  ShouldDecrementDesiredCapacity=True)
    assert answer["Activity"]["Cause"].endswith("shrinking the capacity from 6 to 5.")
    sim.tick()
    assert describe_group(sim)["DesiredCapacity"] == 5
    assert len(live_instances(sim)) == 5


def test_g_terminate_with_decrement_refuses_to_go_below_min_size(sim):
    autoscaling = sim.client("autoscaling")
    autoscaling.update_auto_scaling_group(AutoScalingGroupName=asg(sim), DesiredCapacity=3)
    sim.tick()
    with pytest.raises(ClientError) as excinfo:
        autoscaling.terminate_instance_in_auto_scaling_group(InstanceId=live_instances(sim)[0]["InstanceId"],
                                                             ShouldDecrementDesiredCapacity=True)
    code, message = error_of(excinfo)
    assert code == "ValidationError" and message.startswith("Currently, desiredSize equals minSize (3).")


def test_g_an_instance_terminated_through_ec2_is_replaced(sim):
    victim = live_instances(sim)[0]["InstanceId"]
    answer = sim.client("ec2").terminate_instances(InstanceIds=[victim])
    assert answer["TerminatingInstances"][0]["PreviousState"]["Name"] == "running"
    assert next(i for i in describe_group(sim)["Instances"] if i["InstanceId"] == victim)[
        "LifecycleState"] == "Terminating"
    sim.tick()
    assert len(live_instances(sim)) == 6


# ------------------------------------------------------------------------------------------------ (n)

def test_n_a_group_holds_at_most_50_tags_and_a_call_sets_at_most_25(sim):
    """Auto Scaling user guide, "Tag Auto Scaling groups and instances": 50 tags per resource, 25 per call; a refused
    call changes nothing (SPEC W3)."""
    autoscaling = sim.client("autoscaling")
    name = asg(sim)
    have = len(describe_group(sim)["Tags"])

    def tags(count, start=0):
        return [dict(ResourceId=name, ResourceType="auto-scaling-group", Key="k%02d" % index, Value="v",
                     PropagateAtLaunch=False) for index in range(start, start + count)]

    with pytest.raises(ClientError) as too_many_at_once:
        autoscaling.create_or_update_tags(Tags=tags(26))
    assert too_many_at_once.value.response["Error"]["Code"] == "ValidationError"
    autoscaling.create_or_update_tags(Tags=tags(25))
    autoscaling.create_or_update_tags(Tags=tags(50 - have - 25, start=25))
    assert len(describe_group(sim)["Tags"]) == 50
    autoscaling.create_or_update_tags(Tags=tags(1))  # an update of a tag it has adds none
    with pytest.raises(ClientError) as over:
        autoscaling.create_or_update_tags(Tags=tags(2, start=60))
    assert over.value.response["Error"]["Code"] == "LimitExceeded"
    assert len(describe_group(sim)["Tags"]) == 50


def test_ec2_refuses_a_launch_whose_ami_the_instance_type_cannot_run():
    """Issue 29 item 4: RunInstances refuses an AMI of another architecture than the instance type supports (EC2's
    InvalidParameterValue); Auto Scaling records the failed launch and launches nothing. moto launches anything."""
    scenario = load_scenario({
        "name": "arch", "timings": TIMINGS,
        "amis": [{"name": "eks-node-1.29-v1", "id": OLD_AMI, "kubernetes_version": "1.29"},
                 {"name": "eks-node-arm-1.30-v1", "id": NEW_AMI, "kubernetes_version": "1.30",
                  "family": "amazon-linux-2023/arm64/standard"}],
        "nodegroups": [{"name": "workers", "ami": "eks-node-1.29-v1", "min_size": 1, "max_size": 12,
                        "desired_capacity": 3, "instance_type": "m5.large"}],
    })
    with AwsSim(scenario, Recorder(), Faults([]), launch_retry_seconds=0.05) as sim:
        sim.seed("https://127.0.0.1:6443", None)
        autoscaling = sim.client("autoscaling")
        launch_version_2_of(sim, NEW_AMI, 4)
        for _tick in range(10):
            sim.tick()
            time.sleep(0.01)
        activities = autoscaling.describe_scaling_activities(AutoScalingGroupName=asg(sim))["Activities"]
        failed = [a for a in activities if a["StatusCode"] == "Failed"]
        assert failed and "architecture 'x86_64' of the specified instance type" in failed[0]["StatusMessage"]
        assert "'arm64' of the specified AMI" in failed[0]["StatusMessage"]
        assert len(live_instances(sim)) == 3


def test_o_max_instance_lifetime_and_capacity_rebalance_are_kept_and_reported(sim):
    autoscaling = sim.client("autoscaling")
    group = describe_group(sim)
    assert group.get("MaxInstanceLifetime") is None and group.get("CapacityRebalance") is False
    autoscaling.update_auto_scaling_group(AutoScalingGroupName=asg(sim), MaxInstanceLifetime=604800,
                                          CapacityRebalance=True)
    group = describe_group(sim)
    assert (group["MaxInstanceLifetime"], group["CapacityRebalance"]) == (604800, True)
    with pytest.raises(ClientError) as too_short:
        autoscaling.update_auto_scaling_group(AutoScalingGroupName=asg(sim), MaxInstanceLifetime=3600)
    assert too_short.value.response["Error"]["Code"] == "ValidationError"
    autoscaling.update_auto_scaling_group(AutoScalingGroupName=asg(sim), MaxInstanceLifetime=0,
                                          CapacityRebalance=False)
    group = describe_group(sim)
    assert group.get("MaxInstanceLifetime") is None and group["CapacityRebalance"] is False
