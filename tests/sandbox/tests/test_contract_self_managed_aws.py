# -*- coding: utf-8 -*-
# Copyright: Contributors to the eksops.nodegroup project
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Contract (boto3 against the sandbox's moto): self-managed node groups are seeded with the Auto Scaling group name,
tags and launch template name their real tools give them (SPEC K1), their instances carry the propagated tags, and
the per-AZ launch_failure fault fails launches in that AZ only, as DescribeScalingActivities shows.

The expected values are written out here from the tools' sources (the ones eks_sandbox/conventions.py names), not
taken from conventions.py, so a drift on either side fails:
- eksctl unmanaged node groups: eksctl-io/eksctl pkg/cfn/manager/nodegroup.go (stack eksctl-<cluster>-nodegroup-<ng>,
  stack tags alpha.eksctl.io/*, eksctl.cluster.k8s.io/v1alpha1/cluster-name, eksctl.io/v1alpha2/nodegroup-name,
  which CloudFormation propagates to the group) and pkg/cfn/builder/nodegroup.go (the group's Name=<cluster>-<ng>-Node
  and kubernetes.io/cluster/<cluster>=owned tags, PropagateAtLaunch; the launch template named after the stack);
- terraform-aws-eks modules/self-managed-node-group/main.tf (aws_autoscaling_group name_prefix "<name>-" and tags
  Name, kubernetes.io/cluster/<cluster>, k8s.io/cluster/<cluster> with propagate_at_launch = true;
  aws_launch_template name_prefix "<name>-node-group-"; terraform's name_prefix appends a 26-character unique id:
  UTC timestamp to 1/10000 s and an 8-hex-digit counter);
- the AWS CloudFormation node group template amazon-eks-nodegroup.yaml (EKS user guide, "Create self-managed Amazon
  Linux nodes"): NodeGroup tags Name=<cluster>-<ng>-Node and kubernetes.io/cluster/<cluster>=owned,
  PropagateAtLaunch: true; CloudFormation names the group <stack>-NodeGroup-<suffix> and tags it
  aws:cloudformation:stack-name / logical-id.
"""

from __future__ import annotations

import json
import re
import time

import pytest

from eks_sandbox.aws import AwsSim
from eks_sandbox.faults import Faults
from eks_sandbox.recorder import Recorder
from eks_sandbox.scenario.loader import load_scenario

CLUSTER = "prod"
ZONES = ["us-west-2a", "us-west-2b", "us-west-2c"]
AL2023, AL2, BOTTLEROCKET = ("amazon-eks-node-al2023-x86_64-standard-1.29-v20240101", "amazon-eks-node-1.29-v20240101",
                             "bottlerocket-aws-k8s-1.29-x86_64-v1.20.3-v20240101")
CFN_SUFFIX = r"[A-Za-z0-9]{12,13}"  # CloudFormation's random physical-id suffix
TF_UNIQUE_ID = r"\d{18}[0-9a-f]{8}"   # terraform's PrefixedUniqueId: 20060102150405 + 4 fraction digits + %08x


@pytest.fixture(scope="module")
def sim():
    scenario = load_scenario({
        "name": "conventions", "cluster": {"name": CLUSTER, "tls": False},
        "timings": {"instance_pending_seconds": 0.02, "instance_shutdown_seconds": 0.02},
        "amis": [{"name": AL2023, "kubernetes_version": "1.29"},
                 {"name": AL2, "kubernetes_version": "1.29", "family": "amazon-linux-2"},
                 {"name": BOTTLEROCKET, "kubernetes_version": "1.29", "family": "bottlerocket/x86_64"}],
        "nodegroups": [
            {"name": "ng-eksctl", "kind": "self_managed_eksctl", "ami": AL2023, "min_size": 0, "desired_capacity": 3},
            {"name": "ng-tf", "kind": "self_managed", "ami": AL2, "min_size": 0, "desired_capacity": 3},
            {"name": "ng-cfn", "kind": "self_managed", "convention": "cloudformation", "ami": BOTTLEROCKET,
             "min_size": 0, "desired_capacity": 3}],
        # Used by the last test only; armed after seeding, as the runtime arms faults once the cluster is settled.
        "faults": [{"type": "launch_failure", "availability_zone": "us-west-2b"}],
    })
    faults = Faults(scenario["faults"], scenario["seed"], armed=False)
    with AwsSim(scenario, Recorder(), faults, launch_retry_seconds=0.05) as started:
        started.seed("http://127.0.0.1:6443", None)
        faults.arm()
        yield started


def eksctl_expectations(ng: str) -> dict:
    stack = f"eksctl-{CLUSTER}-nodegroup-{ng}"
    return {"asg_name": rf"{re.escape(stack)}-NodeGroup-{CFN_SUFFIX}",
            "tags": {"Name": f"{CLUSTER}-{ng}-Node", f"kubernetes.io/cluster/{CLUSTER}": "owned",
                     "alpha.eksctl.io/cluster-name": CLUSTER, "alpha.eksctl.io/nodegroup-name": ng,
                     "alpha.eksctl.io/nodegroup-type": "unmanaged", "alpha.eksctl.io/eksctl-version": re.compile(r"\d+\.\d+\.\d+"),
                     "eksctl.cluster.k8s.io/v1alpha1/cluster-name": CLUSTER, "eksctl.io/v1alpha2/nodegroup-name": ng,
                     "aws:cloudformation:stack-name": stack, "aws:cloudformation:logical-id": "NodeGroup"},
            "launch_template_name": re.escape(stack)}


def terraform_expectations(ng: str) -> dict:
    return {"asg_name": rf"{re.escape(ng)}-{TF_UNIQUE_ID}",
            "tags": {"Name": ng, f"kubernetes.io/cluster/{CLUSTER}": "owned", f"k8s.io/cluster/{CLUSTER}": "owned"},
            "launch_template_name": rf"{re.escape(ng)}-node-group-{TF_UNIQUE_ID}"}


def cloudformation_expectations(ng: str) -> dict:
    # The stack name is the user's choice; the group and launch template are named after it by CloudFormation.
    stack = re.compile(r"[A-Za-z][-A-Za-z0-9]*")
    return {"asg_name": rf"(?P<stack>[A-Za-z][-A-Za-z0-9]*)-NodeGroup-{CFN_SUFFIX}",
            "tags": {"Name": f"{CLUSTER}-{ng}-Node", f"kubernetes.io/cluster/{CLUSTER}": "owned",
                     "aws:cloudformation:stack-name": stack, "aws:cloudformation:logical-id": "NodeGroup"},
            "launch_template_name": rf"(?P<stack>[A-Za-z][-A-Za-z0-9]*)-NodeLaunchTemplate-{CFN_SUFFIX}"}


CASES = {"ng-eksctl": eksctl_expectations, "ng-tf": terraform_expectations, "ng-cfn": cloudformation_expectations}


def matches(expected, value) -> bool:
    return bool(expected.fullmatch(value)) if isinstance(expected, re.Pattern) else expected == value


@pytest.mark.parametrize("nodegroup", list(CASES))
def test_the_seeded_group_has_its_tools_name_tags_and_launch_template(sim, nodegroup):
    expected = CASES[nodegroup](nodegroup)
    autoscaling, ec2 = sim.client("autoscaling"), sim.client("ec2")
    # Found as a real client finds it: by the tags (SPEC K1 discovery), not by a name the sandbox made up.
    selector = ({"alpha.eksctl.io/cluster-name": CLUSTER, "alpha.eksctl.io/nodegroup-name": nodegroup}
                if nodegroup == "ng-eksctl" else {f"kubernetes.io/cluster/{CLUSTER}": "owned"})
    found = autoscaling.describe_auto_scaling_groups(
        Filters=[{"Name": f"tag:{k}", "Values": [v]} for k, v in selector.items()])["AutoScalingGroups"]
    [group] = [g for g in found if {t["Key"]: t["Value"] for t in g["Tags"]}.get("Name") == expected["tags"]["Name"]
               ] if nodegroup != "ng-eksctl" else found
    name = group["AutoScalingGroupName"]
    assert name == sim.asg_view(nodegroup)["name"]
    name_match = re.fullmatch(expected["asg_name"], name)
    assert name_match, f"{name!r} is not {expected['asg_name']}"
    tags = autoscaling.describe_tags(Filters=[{"Name": "auto-scaling-group", "Values": [name]}])["Tags"]
    assert all(t["PropagateAtLaunch"] is True and t["ResourceType"] == "auto-scaling-group" for t in tags)
    by_key = {t["Key"]: t["Value"] for t in tags}
    assert set(by_key) == set(expected["tags"]), "exactly the tool's tags"
    assert all(matches(expected["tags"][key], value) for key, value in by_key.items()), by_key
    assert not any(key.startswith(("eks:", "eks.amazonaws.com/")) for key in by_key), "EKS tags only its own groups"

    [template] = ec2.describe_launch_templates(
        LaunchTemplateIds=[group["LaunchTemplate"]["LaunchTemplateId"]])["LaunchTemplates"]
    assert template["LaunchTemplateName"] == group["LaunchTemplate"]["LaunchTemplateName"]
    lt_match = re.fullmatch(expected["launch_template_name"], template["LaunchTemplateName"])
    assert lt_match, f"{template['LaunchTemplateName']!r} is not {expected['launch_template_name']}"
    if nodegroup == "ng-cfn":  # one stack made both, and tagged the group with its name
        assert name_match["stack"] == lt_match["stack"] == by_key["aws:cloudformation:stack-name"]


@pytest.mark.parametrize("nodegroup", list(CASES))
def test_instances_carry_the_groups_propagated_tags(sim, nodegroup):
    name = sim.asg_view(nodegroup)["name"]
    group_tags = {t["Key"]: t["Value"] for t in sim.client("autoscaling").describe_tags(
        Filters=[{"Name": "auto-scaling-group", "Values": [name]}])["Tags"] if t["PropagateAtLaunch"]}
    instances = [i for r in sim.client("ec2").describe_instances(
        Filters=[{"Name": "tag:aws:autoscaling:groupName", "Values": [name]}])["Reservations"] for i in r["Instances"]]
    assert len(instances) >= 3
    versions = {i["InstanceId"]: i["LaunchTemplate"] for i in sim.client("autoscaling").describe_auto_scaling_groups(
        AutoScalingGroupNames=[name])["AutoScalingGroups"][0]["Instances"]}
    for instance in instances:
        tags = {t["Key"]: t["Value"] for t in instance["Tags"]}
        template = versions[instance["InstanceId"]]
        # The group's tags, plus the ones AWS adds to every instance an Auto Scaling group launches from a template.
        assert tags == {**group_tags, "aws:autoscaling:groupName": name,
                        "aws:ec2launchtemplate:id": template["LaunchTemplateId"],
                        "aws:ec2launchtemplate:version": template["Version"]}, instance["InstanceId"]


def test_launch_failure_fails_launches_in_its_zone_only(sim):
    autoscaling = sim.client("autoscaling")
    name = sim.asg_view("ng-tf")["name"]
    before = {a["ActivityId"] for a in autoscaling.describe_scaling_activities(AutoScalingGroupName=name)["Activities"]}
    autoscaling.set_desired_capacity(AutoScalingGroupName=name, DesiredCapacity=6)
    deadline = time.monotonic() + 5
    while True:
        sim.tick()
        live = [i for i in autoscaling.describe_auto_scaling_groups(AutoScalingGroupNames=[name])[
            "AutoScalingGroups"][0]["Instances"] if i["LifecycleState"] in ("Pending", "InService")]
        activities = [a for a in autoscaling.describe_scaling_activities(AutoScalingGroupName=name)["Activities"]
                      if a["ActivityId"] not in before]
        failed = [a for a in activities if a["StatusCode"] == "Failed"]
        if len(live) == 6 and failed:
            break
        assert time.monotonic() < deadline, (len(live), len(failed))
        time.sleep(0.03)
    for activity in failed:
        assert json.loads(activity["Details"])["Availability Zone"] == "us-west-2b"
        assert activity["StatusMessage"].startswith(
            "We currently do not have sufficient m5.large capacity in the Availability Zone you requested "
            "(us-west-2b).")  # what EC2 says for InsufficientInstanceCapacity
        assert activity["Description"] == f"Launching a new EC2 instance.  Status Reason: {activity['StatusMessage']}"
    launched = [a for a in activities if a["StatusCode"] != "Failed"]
    assert len(launched) == 3
    assert {json.loads(a["Details"])["Availability Zone"] for a in launched} <= {"us-west-2a", "us-west-2c"}
    zones = [i["AvailabilityZone"] for i in live]
    assert zones.count("us-west-2b") == 1, "only the instance seeded before the fault was armed"
    # The other groups launched nothing and failed nothing.
    for other in ("ng-eksctl", "ng-cfn"):
        statuses = {a["StatusCode"] for a in autoscaling.describe_scaling_activities(
            AutoScalingGroupName=sim.asg_view(other)["name"])["Activities"]}
        assert statuses == {"Successful"}
