# -*- coding: utf-8 -*-
# Copyright: Contributors to the eksops.nodegroup project
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""EKS managed node groups as a real client sees them (boto3 against a running sandbox, every response checked
against botocore's EKS model): CreateNodegroup's resources, DescribeNodegroup / ListNodegroups, the node labels
EKS's user data gives, the launch-template health check, UpdateNodegroupConfig and the input checks of
UpdateNodegroupVersion."""

from __future__ import annotations

import base64
import json

import pytest
from botocore.exceptions import ClientError

from harness import EKS_CLUSTER, OLD_AMI, client, running, valid, wait_for
from eks_sandbox.kube.testing import scenario
from eks_sandbox.scenario.schema import generated_ami_id

CLUSTER = "eks"
TAINT = {"key": "dedicated", "value": "web", "effect": "NoSchedule"}
OLD_AMI_ID = generated_ami_id(OLD_AMI)


@pytest.fixture(scope="module")
def sandbox():
    loaded = scenario(
        **EKS_CLUSTER,
        nodegroups=[{"name": "workers", "kind": "managed", "ami": OLD_AMI, "min_size": 1, "max_size": 4,
                     "desired_capacity": 3, "labels": {"team": "web"}, "taints": [TAINT],
                     "update_config": {"max_unavailable": 2}},
                    {"name": "custom", "kind": "managed", "launch_template": "custom", "ami": OLD_AMI, "min_size": 1,
                     "max_size": 2, "desired_capacity": 1},
                    {"name": "batch", "ami": OLD_AMI, "min_size": 1, "max_size": 1, "desired_capacity": 1,
                     "labels": {"role": "batch"}}],
        faults=[{"type": "aws_error", "action": "DescribeNodegroup", "code": "ThrottlingException", "count": 1}])
    with running(loaded) as started:
        yield started


@pytest.fixture(scope="module")
def eks(sandbox):
    return client(sandbox, "eks")


def describe(eks, nodegroup):
    return valid(eks, "DescribeNodegroup", eks.describe_nodegroup(clusterName=CLUSTER, nodegroupName=nodegroup))[
        "nodegroup"]


def asg_of(sandbox, nodegroup):
    groups = client(sandbox, "autoscaling").describe_auto_scaling_groups(
        Filters=[{"Name": "tag:eks:nodegroup-name", "Values": [nodegroup]}])["AutoScalingGroups"]
    assert len(groups) == 1
    return groups[0]


def launch_template_data(sandbox, template_id, version):
    return client(sandbox, "ec2").describe_launch_template_versions(
        LaunchTemplateId=template_id, Versions=[str(version)])["LaunchTemplateVersions"][0]["LaunchTemplateData"]


def error_of(call, **kwargs):
    with pytest.raises(ClientError) as caught:
        call(**kwargs)
    return caught.value.response


# ------------------------------------------------------------------------------------------------ creation

def test_a_node_group_with_eks_launch_template_is_described_as_eks_does(sandbox, eks):
    raw = []
    eks.meta.events.register("before-parse.eks.DescribeNodegroup",
                             lambda response_dict, **kwargs: raw.append(json.loads(response_dict["body"])))
    nodegroup = describe(eks, "workers")
    group = asg_of(sandbox, "workers")
    uuid = group["AutoScalingGroupName"].removeprefix("eks-workers-")
    assert nodegroup["nodegroupArn"] == f"arn:aws:eks:us-west-2:123456789012:nodegroup/{CLUSTER}/workers/{uuid}"
    assert (nodegroup["status"], nodegroup["version"], nodegroup["releaseVersion"]) == (
        "ACTIVE", "1.29", "1.29.0-20240101")
    assert (nodegroup["amiType"], nodegroup["capacityType"]) == ("AL2023_x86_64_STANDARD", "ON_DEMAND")
    assert nodegroup["scalingConfig"] == {"minSize": 1, "maxSize": 4, "desiredSize": 3}
    assert (nodegroup["instanceTypes"], nodegroup["diskSize"]) == (["m5.large"], 20)
    assert "launchTemplate" not in nodegroup
    assert nodegroup["labels"] == {"team": "web"}
    assert nodegroup["taints"] == [{"key": "dedicated", "value": "web", "effect": "NO_SCHEDULE"}]
    assert nodegroup["resources"]["autoScalingGroups"] == [{"name": group["AutoScalingGroupName"]}]
    assert sorted(nodegroup["subnets"]) == sorted(group["VPCZoneIdentifier"].split(","))
    assert nodegroup["updateConfig"] == {"maxUnavailable": 2, "updateStrategy": "DEFAULT"}
    assert nodegroup["health"] == {"issues": []}
    assert isinstance(raw[-1]["nodegroup"]["createdAt"], (int, float))  # rest-json timestamps: epoch seconds
    # EKS's own launch template, version 1, with the AMI and user data carrying EKS's labels.
    template = group["LaunchTemplate"]
    assert (template["LaunchTemplateName"], template["Version"]) == (f"eks-{uuid}", "1")
    data = launch_template_data(sandbox, template["LaunchTemplateId"], 1)
    assert (data["ImageId"], data["InstanceType"]) == (OLD_AMI_ID, "m5.large")
    user_data = base64.b64decode(data["UserData"]).decode()
    assert "kind: NodeConfig" in user_data
    assert (f"--node-labels=eks.amazonaws.com/nodegroup-image={OLD_AMI_ID},eks.amazonaws.com/capacityType=ON_DEMAND,"
            "eks.amazonaws.com/nodegroup=workers,team=web") in user_data
    tags = {t["Key"]: t["Value"] for t in group["Tags"]}
    assert tags["eks:nodegroup-name"] == "workers" and all(t["PropagateAtLaunch"] for t in group["Tags"])


def test_a_node_group_with_a_custom_launch_template_is_copied_into_eks_own(sandbox, eks):
    nodegroup = describe(eks, "custom")
    ec2 = client(sandbox, "ec2")
    custom = ec2.describe_launch_templates(LaunchTemplateNames=["custom-custom"])["LaunchTemplates"][0]
    assert nodegroup["launchTemplate"] == {"name": "custom-custom", "version": "1", "id": custom["LaunchTemplateId"]}
    assert "instanceTypes" not in nodegroup and "diskSize" not in nodegroup
    assert "ImageId" not in launch_template_data(sandbox, custom["LaunchTemplateId"], 1)
    group = asg_of(sandbox, "custom")
    assert group["LaunchTemplate"]["LaunchTemplateId"] != custom["LaunchTemplateId"]
    copy = launch_template_data(sandbox, group["LaunchTemplate"]["LaunchTemplateId"], 1)
    assert copy["ImageId"] == OLD_AMI_ID
    merged = base64.b64decode(copy["UserData"]).decode()
    # The user's part first, EKS's last.
    assert merged.index('echo "Running custom user data script"') < merged.index("kind: NodeConfig")
    assert f"eks.amazonaws.com/sourceLaunchTemplateId={custom['LaunchTemplateId']}" in merged
    assert "eks.amazonaws.com/sourceLaunchTemplateVersion=1" in merged


def test_list_nodegroups_names_the_managed_groups_only_and_pages(eks):
    assert valid(eks, "ListNodegroups", eks.list_nodegroups(clusterName=CLUSTER))["nodegroups"] == [
        "workers", "custom"]
    first = valid(eks, "ListNodegroups", eks.list_nodegroups(clusterName=CLUSTER, maxResults=1))
    second = eks.list_nodegroups(clusterName=CLUSTER, maxResults=1, nextToken=first["nextToken"])
    assert first["nodegroups"] + second["nodegroups"] == ["workers", "custom"] and "nextToken" not in second


def test_a_self_managed_node_group_and_an_unknown_cluster_are_not_found(eks):
    response = error_of(eks.describe_nodegroup, clusterName=CLUSTER, nodegroupName="batch")
    assert response["Error"] == {"Code": "ResourceNotFoundException",
                                 "Message": "No node group found for name: batch."}
    assert response["ResponseMetadata"]["HTTPStatusCode"] == 404
    assert (response["clusterName"], response["nodegroupName"]) == (CLUSTER, "batch")
    response = error_of(eks.list_nodegroups, clusterName="nope")
    assert response["Error"]["Message"] == "No cluster found for name: nope."


def test_nodes_carry_the_labels_of_eks_user_data(sandbox):
    nodegroups = sandbox.report()["nodegroups"]
    workers, custom = nodegroups["workers"]["nodes"], nodegroups["custom"]["nodes"]
    assert len(workers) == 3 and len(custom) == 1
    for node in workers:
        labels = node["labels"]
        assert labels["eks.amazonaws.com/nodegroup"] == "workers"
        assert labels["eks.amazonaws.com/nodegroup-image"] == node["ami"] == OLD_AMI_ID
        assert labels["eks.amazonaws.com/capacityType"] == "ON_DEMAND" and labels["team"] == "web"
        assert "eks.amazonaws.com/sourceLaunchTemplateId" not in labels
    custom_template = asg_of(sandbox, "custom")  # the user's template is what the labels name, not EKS's copy
    labels = custom[0]["labels"]
    assert labels["eks.amazonaws.com/sourceLaunchTemplateVersion"] == "1"
    assert labels["eks.amazonaws.com/sourceLaunchTemplateId"] != custom_template["LaunchTemplate"]["LaunchTemplateId"]
    assert "eks.amazonaws.com/nodegroup" not in nodegroups["batch"]["nodes"][0]["labels"]


# ------------------------------------------------------------------------------------------------ health

def test_pointing_the_asg_at_another_launch_template_version_degrades_the_node_group(sandbox, eks):
    group = asg_of(sandbox, "workers")
    template_id = group["LaunchTemplate"]["LaunchTemplateId"]
    client(sandbox, "ec2").create_launch_template_version(
        LaunchTemplateId=template_id, SourceVersion="1", LaunchTemplateData={"InstanceType": "m5.xlarge"})
    autoscaling = client(sandbox, "autoscaling")
    autoscaling.update_auto_scaling_group(AutoScalingGroupName=group["AutoScalingGroupName"],
                                          LaunchTemplate={"LaunchTemplateId": template_id, "Version": "2"})
    degraded = wait_for(lambda: (ng := describe(eks, "workers"))["status"] == "DEGRADED" and ng)
    assert degraded["health"]["issues"] == [{
        "code": "Ec2LaunchTemplateVersionMismatch",
        "message": f"The Amazon EC2 Launch Template : {template_id} has a new version associated with your "
                   "Autoscaling group, which is not managed by Amazon EKS. Expected Launch Template version: 1",
        "resourceIds": [group["AutoScalingGroupName"]]}]
    autoscaling.update_auto_scaling_group(AutoScalingGroupName=group["AutoScalingGroupName"],
                                          LaunchTemplate={"LaunchTemplateId": template_id, "Version": "1"})
    recovered = wait_for(lambda: (ng := describe(eks, "workers"))["status"] == "ACTIVE" and ng)
    assert recovered["health"] == {"issues": []}


# ------------------------------------------------------------------------------------------------ updates

def test_update_nodegroup_config_records_a_config_update_that_succeeds(sandbox, eks):
    update = valid(eks, "UpdateNodegroupConfig", eks.update_nodegroup_config(
        clusterName=CLUSTER, nodegroupName="custom", updateConfig={"maxUnavailablePercentage": 50},
        scalingConfig={"minSize": 1, "maxSize": 3, "desiredSize": 2}))["update"]
    assert (update["type"], update["status"]) == ("ConfigUpdate", "InProgress")
    assert update["params"] == [{"type": "MaxUnavailablePercentage", "value": "50"},
                                {"type": "MinSize", "value": "1"}, {"type": "MaxSize", "value": "3"},
                                {"type": "DesiredSize", "value": "2"}]
    done = wait_for(lambda: (u := eks.describe_update(name=CLUSTER, updateId=update["id"], nodegroupName="custom")[
        "update"])["status"] == "Successful" and u)
    assert done["errors"] == []
    nodegroup = describe(eks, "custom")
    assert nodegroup["updateConfig"] == {"maxUnavailablePercentage": 50, "updateStrategy": "DEFAULT"}
    assert nodegroup["scalingConfig"] == {"minSize": 1, "maxSize": 3, "desiredSize": 2}
    group = asg_of(sandbox, "custom")
    assert (group["MinSize"], group["MaxSize"], group["DesiredCapacity"]) == (1, 3, 2)
    assert valid(eks, "ListUpdates", eks.list_updates(name=CLUSTER, nodegroupName="custom"))["updateIds"] == [
        update["id"]]
    response = error_of(eks.update_nodegroup_config, clusterName=CLUSTER, nodegroupName="custom",
                        scalingConfig={"minSize": 3, "maxSize": 2})
    assert response["Error"]["Code"] == "InvalidParameterException"


@pytest.mark.parametrize("request_args, code, message", [
    ({"nodegroupName": "workers", "version": "1.31"}, "InvalidParameterException",
     "Nodegroup Kubernetes version should be equal to Cluster kubernetes version 1.30 or NodeGroup kubernetes "
     "version 1.29"),
    ({"nodegroupName": "workers", "releaseVersion": "1.29.0-20990101"}, "InvalidParameterException",
     "Requested release version 1.29.0-20990101 is not valid for kubernetes version 1.29."),
    ({"nodegroupName": "workers", "launchTemplate": {"name": "custom-custom", "version": "1"}},
     "InvalidRequestException", "You can only update a node group using a launch template if the node group was "
                                "originally deployed with a launch template."),
    ({"nodegroupName": "custom", "launchTemplate": {"name": "custom-custom", "id": "lt-0", "version": "1"}},
     "InvalidParameterException", "Either provide launch template ID or launch template name in the request."),
    ({"nodegroupName": "batch"}, "ResourceNotFoundException", "No node group found for name: batch."),
])
def test_update_nodegroup_version_checks_its_input_as_eks_does(eks, request_args, code, message):
    response = error_of(eks.update_nodegroup_version, clusterName=CLUSTER, **request_args)
    assert response["Error"] == {"Code": code, "Message": message}
    assert response["ResponseMetadata"]["HTTPStatusCode"] == {"ResourceNotFoundException": 404}.get(code, 400)


def test_eks_operations_are_recorded_and_take_injected_faults(sandbox, eks):
    describe(eks, "workers")  # the first DescribeNodegroup was throttled and retried by botocore
    calls = sandbox.report()["aws_calls"]
    assert calls["DescribeNodegroup ThrottlingException"] == 1
    assert calls["DescribeNodegroup OK"] >= 1 and calls["DescribeNodegroup ResourceNotFoundException"] >= 1
    assert calls["ListNodegroups OK"] >= 1
