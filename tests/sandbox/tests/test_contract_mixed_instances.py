# -*- coding: utf-8 -*-
# Copyright: Contributors to the eksops.nodegroup project
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Contract (boto3, botocore's models): what an Auto Scaling group with a MixedInstancesPolicy launches and how it
counts its capacity, as the sandbox plays it (aws/mixed_instances.py, moto_patches (p); SPEC W2, issue 29 item 2).

Expected behaviour, from the Amazon EC2 Auto Scaling user guide and API reference, not from the collection:
- "Auto Scaling groups with multiple instance types and purchase options": OnDemandBaseCapacity first, then
  OnDemandPercentageAboveBaseCapacity of the rest, rounded "up to the next integer in favor of On-Demand Instances";
  the rest is Spot (EC2's InstanceLifecycle "spot"). On-Demand's `prioritized` strategy takes the first override.
- "Specify a different launch template for an instance type" and LaunchTemplateOverrides.ImageId: an override
  launches its type from its own template, or with its own AMI (reported as the instance's ImageId).
- "Configure instance weighting": sizes count capacity units; "Current capacity will either be at the desired
  capacity or above it"; each instance reports its WeightedCapacity.
- UpdateAutoScalingGroup: "Any properties that you don't specify are not changed by this update request".
"""

from __future__ import annotations

import time

from eks_sandbox.scenario.loader import load_scenario

from harness import asg, aws_running, describe_group, valid

TIMINGS = {"instance_pending_seconds": 0.05, "instance_shutdown_seconds": 0.05}
X86, ARM = "eks-node-1.29-v1", "eks-node-1.29-arm-v1"


def scenario(overrides, desired=6, base=1, percentage=50):
    return load_scenario({
        "name": "mixed", "timings": TIMINGS,
        "amis": [{"name": X86, "kubernetes_version": "1.29"},
                 {"name": ARM, "kubernetes_version": "1.29", "family": "amazon-linux-2023/arm64/standard"}],
        "nodegroups": [{"name": "workers", "ami": X86, "min_size": 0, "max_size": 20, "desired_capacity": desired,
                        "mixed_instances": {"overrides": overrides, "on_demand_base_capacity": base,
                                            "on_demand_percentage_above_base_capacity": percentage}}],
    })


def settle(sim, seconds=0.3):
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        sim.tick()
        time.sleep(0.02)


def instances(sim):
    """{instance id: (ASG record, EC2 description)} of the group's live instances, through boto3."""
    group = describe_group(sim)
    ec2 = sim.client("ec2")
    ids = [i["InstanceId"] for i in group["Instances"]]
    described = valid(ec2, "DescribeInstances", ec2.describe_instances(InstanceIds=ids))
    by_id = {i["InstanceId"]: i for r in described["Reservations"] for i in r["Instances"]}
    return {i["InstanceId"]: (i, by_id[i["InstanceId"]]) for i in group["Instances"]}


def test_on_demand_base_and_percentage_then_spot_spread_over_the_types():
    """6 = 1 base + 5 above at 50 %: ceil(2.5) = 3 more On-Demand (4 in all, the first type), 2 Spot."""
    with aws_running(scenario([{"instance_type": "m5.large"}, {"instance_type": "m5a.large"}])) as sim:
        settle(sim)
        found = instances(sim)
        assert len(found) == 6
        on_demand = [a for a, e in found.values() if e.get("InstanceLifecycle") != "spot"]
        spot = [a for a, e in found.values() if e.get("InstanceLifecycle") == "spot"]
        assert len(on_demand) == 4 and {a["InstanceType"] for a in on_demand} == {"m5.large"}
        assert len(spot) == 2 and all("WeightedCapacity" not in a for a, _e in found.values())
        # The group still reports its policy, and only the policy (no top-level LaunchTemplate).
        group = describe_group(sim)
        assert group["MixedInstancesPolicy"]["InstancesDistribution"]["OnDemandBaseCapacity"] == 1
        assert "LaunchTemplate" not in group


def test_an_override_of_its_own_ami_launches_with_it_and_says_so():
    with aws_running(scenario([{"instance_type": "m6g.large", "ami": ARM}], desired=2, base=2)) as sim:
        settle(sim)
        found = instances(sim)
        amis = {a["ImageId"] for a, _e in found.values()}
        assert len(found) == 2 and amis == {e["ImageId"] for _a, e in found.values()}
        arm = sim.client("ec2").describe_images(ImageIds=list(amis))["Images"][0]
        assert arm["Architecture"] == "arm64" and {a["InstanceType"] for a, _e in found.values()} == {"m6g.large"}


def test_weighted_capacity_counts_units_and_may_overshoot():
    """Desired 5 units of weight-2 instances: 3 instances (6 units, "at the desired capacity or above it")."""
    with aws_running(scenario([{"instance_type": "m5.xlarge", "weighted_capacity": 2}], desired=5, base=5)) as sim:
        settle(sim)
        found = instances(sim)
        assert len(found) == 3 and {a["WeightedCapacity"] for a, _e in found.values()} == {"2"}
        autoscaling = sim.client("autoscaling")
        autoscaling.set_desired_capacity(AutoScalingGroupName=asg(sim), DesiredCapacity=2)
        settle(sim)
        live = [a for a, _e in instances(sim).values() if a["LifecycleState"] in ("Pending", "InService")]
        assert len(live) == 1


def test_an_update_changes_only_the_parts_of_the_policy_it_is_given():
    with aws_running(scenario([{"instance_type": "m5.large"}, {"instance_type": "m5a.large"}], desired=2)) as sim:
        settle(sim)
        autoscaling = sim.client("autoscaling")
        before = describe_group(sim)["MixedInstancesPolicy"]
        autoscaling.update_auto_scaling_group(AutoScalingGroupName=asg(sim), MaxSize=10)
        assert describe_group(sim)["MixedInstancesPolicy"] == before
        spec = before["LaunchTemplate"]["LaunchTemplateSpecification"]
        version = sim.client("ec2").create_launch_template_version(
            LaunchTemplateId=spec["LaunchTemplateId"], SourceVersion="1",
            LaunchTemplateData={})["LaunchTemplateVersion"]["VersionNumber"]
        autoscaling.update_auto_scaling_group(AutoScalingGroupName=asg(sim), MixedInstancesPolicy={
            "LaunchTemplate": {"LaunchTemplateSpecification": {"LaunchTemplateId": spec["LaunchTemplateId"],
                                                               "Version": str(version)}}})
        after = describe_group(sim)["MixedInstancesPolicy"]
        assert after["LaunchTemplate"]["Overrides"] == before["LaunchTemplate"]["Overrides"]
        assert after["InstancesDistribution"] == before["InstancesDistribution"]
        assert after["LaunchTemplate"]["LaunchTemplateSpecification"]["Version"] == str(version)


def test_an_override_of_its_own_template_launches_its_type_from_it():
    with aws_running(scenario([{"instance_type": "m5.large"}], desired=1, base=2)) as sim:
        settle(sim)
        ec2, autoscaling = sim.client("ec2"), sim.client("autoscaling")
        arm_ami = ec2.describe_images(Filters=[{"Name": "name", "Values": [ARM]}])["Images"][0]["ImageId"]
        arm = ec2.create_launch_template(LaunchTemplateName="workers-arm", LaunchTemplateData={
            "ImageId": arm_ami, "InstanceType": "m6g.large"})["LaunchTemplate"]["LaunchTemplateId"]
        autoscaling.update_auto_scaling_group(AutoScalingGroupName=asg(sim), DesiredCapacity=2, MixedInstancesPolicy={
            "LaunchTemplate": {"Overrides": [{"InstanceType": "m6g.large", "LaunchTemplateSpecification": {
                "LaunchTemplateId": arm, "Version": "$Latest"}}]}})
        settle(sim)
        launched = [a for a, _e in instances(sim).values() if a["InstanceType"] == "m6g.large"]
        assert len(launched) == 1 and launched[0]["LaunchTemplate"]["LaunchTemplateId"] == arm
        assert instances(sim)[launched[0]["InstanceId"]][1]["ImageId"] == arm_ami
