# -*- coding: utf-8 -*-
# Copyright: Contributors to the eksops.nodegroup project
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Contract (boto3 against the sandbox's moto): a launch template whose ImageId is a Systems Manager parameter
(moto_patches (q)). Modelled from the EC2 User Guide, "Use a Systems Manager parameter instead of an AMI ID": the
ImageId resolve:ssm:parameter-name[:version-number|:label] is "resolved to an AMI ID when the instance is launched",
so an instance runs the AMI the parameter named at its launch and a parameter changed later changes what the next
launch gets; and from the API reference of DescribeLaunchTemplateVersions, ResolveAlias: "If true, and if a Systems
Manager parameter is specified for ImageId, the AMI ID is displayed in the response for imageId. If false, ... the
parameter is displayed" (default false)."""

from __future__ import annotations

import pytest

from eks_sandbox.scenario.loader import load_scenario

from harness import asg, aws_running, describe_group, tick_until, valid

TIMINGS = {"instance_pending_seconds": 0.05, "instance_shutdown_seconds": 0.05}
OLD, NEW = "eks-node-1.29-v1", "eks-node-1.30-v1"
PARAMETER = "/workers/ami"


@pytest.fixture
def sim():
    with aws_running(load_scenario({
        "name": "resolve-ssm", "timings": TIMINGS,
        "amis": [{"name": OLD, "kubernetes_version": "1.29"}, {"name": NEW, "kubernetes_version": "1.30"}],
        "nodegroups": [{"name": "workers", "ami": OLD, "min_size": 1, "max_size": 12, "desired_capacity": 2}],
    })) as started:
        yield started


def launched_images(sim):
    """{instance id: the AMI EC2 says it runs} of the group's InService instances."""
    ids = [i["InstanceId"] for i in describe_group(sim)["Instances"] if i["LifecycleState"] == "InService"]
    reservations = sim.client("ec2").describe_instances(InstanceIds=ids)["Reservations"]
    return dict((i["InstanceId"], i["ImageId"]) for r in reservations for i in r["Instances"])


def image_of_version(sim, lt_id, version, **resolve):
    ec2 = sim.client("ec2")
    answer = valid(ec2, "DescribeLaunchTemplateVersions", ec2.describe_launch_template_versions(
        LaunchTemplateId=lt_id, Versions=[str(version)], **resolve))
    return answer["LaunchTemplateVersions"][0]["LaunchTemplateData"]["ImageId"]


def test_an_ssm_image_id_is_resolved_by_resolve_alias_and_at_each_launch(sim):
    ssm, ec2, autoscaling = sim.client("ssm"), sim.client("ec2"), sim.client("autoscaling")
    old_ami, new_ami = sim.ami_id(OLD), sim.ami_id(NEW)
    ssm.put_parameter(Name=PARAMETER, Value=old_ami, Type="String")
    lt_id = describe_group(sim)["LaunchTemplate"]["LaunchTemplateId"]
    version = ec2.create_launch_template_version(
        LaunchTemplateId=lt_id, SourceVersion="1",
        LaunchTemplateData={"ImageId": "resolve:ssm:" + PARAMETER})["LaunchTemplateVersion"]["VersionNumber"]
    assert image_of_version(sim, lt_id, version) == "resolve:ssm:" + PARAMETER
    assert image_of_version(sim, lt_id, version, ResolveAlias=False) == "resolve:ssm:" + PARAMETER
    assert image_of_version(sim, lt_id, version, ResolveAlias=True) == old_ami
    assert image_of_version(sim, lt_id, 1, ResolveAlias=True) == old_ami  # an AMI id stays what it is

    before = set(launched_images(sim))
    autoscaling.update_auto_scaling_group(AutoScalingGroupName=asg(sim), DesiredCapacity=3, LaunchTemplate={
        "LaunchTemplateId": lt_id, "Version": str(version)})
    tick_until(sim, lambda: len(launched_images(sim)) == 3)
    [first] = set(launched_images(sim)) - before
    assert launched_images(sim)[first] == old_ami

    # The parameter moves on: the next launch gets the new AMI, the running instance keeps its own.
    ssm.put_parameter(Name=PARAMETER, Value=new_ami, Type="String", Overwrite=True)
    assert image_of_version(sim, lt_id, version, ResolveAlias=True) == new_ami
    autoscaling.set_desired_capacity(AutoScalingGroupName=asg(sim), DesiredCapacity=4)
    tick_until(sim, lambda: len(launched_images(sim)) == 4)
    [second] = set(launched_images(sim)) - before - {first}
    assert (launched_images(sim)[first], launched_images(sim)[second]) == (old_ami, new_ami)


def test_a_parameter_version_is_resolved_as_named(sim):
    ssm, ec2 = sim.client("ssm"), sim.client("ec2")
    ssm.put_parameter(Name=PARAMETER, Value=sim.ami_id(OLD), Type="String")
    ssm.put_parameter(Name=PARAMETER, Value=sim.ami_id(NEW), Type="String", Overwrite=True)
    lt_id = describe_group(sim)["LaunchTemplate"]["LaunchTemplateId"]
    version = ec2.create_launch_template_version(
        LaunchTemplateId=lt_id, SourceVersion="1",
        LaunchTemplateData={"ImageId": "resolve:ssm:%s:1" % PARAMETER})["LaunchTemplateVersion"]["VersionNumber"]
    assert image_of_version(sim, lt_id, version, ResolveAlias=True) == sim.ami_id(OLD)
