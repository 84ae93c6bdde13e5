# -*- coding: utf-8 -*-
# Copyright: Contributors to the eksops.nodegroup project
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""module_utils/aws/<service>.py (issue 12): every AWS call of the collection, one function each under aws.aws_call.

Each function is driven through a real boto3 client with botocore's Stubber, which validates the request against
the service model: the request it sends, what it makes of the answer, and, when AWS refuses, an UpgradeError with
the U8 code whose message is filled from the function's arguments. A function with no case here fails the
coverage test.
"""

from __future__ import annotations

import datetime
import inspect

import boto3
import pytest
from botocore.stub import Stubber

from ansible_collections.eksops.nodegroup.plugins.module_utils.aws import autoscaling, ec2, eks, elb, elbv2, ssm, sts
from ansible_collections.eksops.nodegroup.plugins.module_utils.errors import UpgradeError

ASG = "workers"
LT = "lt-0123456789abcdef0"
GROUP = {"AutoScalingGroupName": ASG, "MinSize": 1, "MaxSize": 3, "DesiredCapacity": 2, "DefaultCooldown": 300,
         "AvailabilityZones": ["us-west-2a"], "HealthCheckType": "EC2",
         "CreatedTime": datetime.datetime(2026, 1, 1, tzinfo=datetime.timezone.utc)}
UPDATE = {"id": "u-1", "status": "InProgress", "type": "VersionUpdate"}
NAMES = {"clusterName": "prod", "nodegroupName": "ng-1"}
LT_SPEC = {"LaunchTemplateId": LT, "Version": "4"}
ROLE_ARN = "arn:aws:iam::210987654321:role/eks-fleet-inventory"
TG_ARN = "arn:aws:elasticloadbalancing:us-west-2:123456789012:targetgroup/k8s-default-web/0123456789abcdef"
DRAINING_TARGET = {"Target": {"Id": "i-1", "Port": 30080},
                   "TargetHealth": {"State": "draining", "Reason": "Target.DeregistrationInProgress"}}
CLASSIC_DRAINING = {"InstanceId": "i-1", "State": "InService", "ReasonCode": "N/A",
                    "Description": "Instance deregistration currently in progress."}


def group_tag(key, value):
    return dict(ResourceId=ASG, ResourceType="auto-scaling-group", Key=key, Value=value, PropagateAtLaunch=False)


# (service module, function, arguments, operation, expected request, response, expected result, words of the
# message when AWS refuses)
CASES = [
    (autoscaling, "describe_auto_scaling_group", (ASG,), "describe_auto_scaling_groups",
     {"AutoScalingGroupNames": [ASG]}, {"AutoScalingGroups": [GROUP]}, GROUP, "describe Auto Scaling group workers"),
    (autoscaling, "describe_auto_scaling_group", (ASG,), "describe_auto_scaling_groups",
     {"AutoScalingGroupNames": [ASG]}, {"AutoScalingGroups": []}, None, "describe Auto Scaling group workers"),
    (autoscaling, "describe_auto_scaling_groups", (["a", "b"],), "describe_auto_scaling_groups",
     {"AutoScalingGroupNames": ["a", "b"]}, {"AutoScalingGroups": [GROUP]}, [GROUP],
     "describe Auto Scaling groups a, b"),
    (autoscaling, "describe_all_auto_scaling_groups", (), "describe_auto_scaling_groups", {"MaxRecords": 100},
     {"AutoScalingGroups": [GROUP]}, [GROUP], "describe every Auto Scaling group of the region"),
    (autoscaling, "find_auto_scaling_groups", ({"alpha.eksctl.io/cluster-name": "prod",
                                                "kubernetes.io/cluster/prod": None},), "describe_auto_scaling_groups",
     {"Filters": [{"Name": "tag:alpha.eksctl.io/cluster-name", "Values": ["prod"]},
                  {"Name": "tag-key", "Values": ["kubernetes.io/cluster/prod"]}]},
     {"AutoScalingGroups": [GROUP]}, [GROUP],
     "find the Auto Scaling groups tagged alpha.eksctl.io/cluster-name=prod, kubernetes.io/cluster/prod"),
    (autoscaling, "update_sizes", (ASG, None, 4, 3), "update_auto_scaling_group",
     {"AutoScalingGroupName": ASG, "MaxSize": 4, "DesiredCapacity": 3}, {}, None,
     "update the sizes of Auto Scaling group workers (MaxSize=4, DesiredCapacity=3)"),
    (autoscaling, "set_launch_template", (ASG, LT_SPEC, False), "update_auto_scaling_group",
     {"AutoScalingGroupName": ASG, "LaunchTemplate": LT_SPEC}, {}, None,
     "update Auto Scaling group workers to launch template %s version 4" % LT),
    (autoscaling, "set_launch_template", (ASG, LT_SPEC, True), "update_auto_scaling_group",
     {"AutoScalingGroupName": ASG, "MixedInstancesPolicy": {"LaunchTemplate": {
         "LaunchTemplateSpecification": LT_SPEC}}}, {}, None, "to launch template %s version 4" % LT),
    (autoscaling, "suspend_processes", (ASG, ["AZRebalance", "Launch"]), "suspend_processes",
     {"AutoScalingGroupName": ASG, "ScalingProcesses": ["AZRebalance", "Launch"]}, {}, None,
     "suspend processes AZRebalance, Launch of Auto Scaling group workers"),
    (autoscaling, "resume_processes", (ASG, ("AZRebalance",)), "resume_processes",
     {"AutoScalingGroupName": ASG, "ScalingProcesses": ["AZRebalance"]}, {}, None,
     "resume processes AZRebalance of Auto Scaling group workers"),
    (autoscaling, "set_instance_protection", (ASG, ["i-1", "i-2"], False), "set_instance_protection",
     {"AutoScalingGroupName": ASG, "InstanceIds": ["i-1", "i-2"], "ProtectedFromScaleIn": False}, {}, None,
     "remove the scale-in protection of instances i-1, i-2 of workers"),
    (autoscaling, "describe_scaling_activities", (ASG, 10), "describe_scaling_activities",
     {"AutoScalingGroupName": ASG, "MaxRecords": 10}, {"Activities": []}, [],
     "describe scaling activities of workers"),
    (autoscaling, "terminate_instance_in_auto_scaling_group", ("i-1", True),
     "terminate_instance_in_auto_scaling_group", {"InstanceId": "i-1", "ShouldDecrementDesiredCapacity": True}, {},
     None, "terminate instance i-1 through its Auto Scaling group"),
    (autoscaling, "describe_instance_refreshes", (ASG,), "describe_instance_refreshes", {"AutoScalingGroupName": ASG},
     {"InstanceRefreshes": [{"InstanceRefreshId": "r-1", "Status": "InProgress"}]},
     [{"InstanceRefreshId": "r-1", "Status": "InProgress"}],
     "describe the instance refreshes of Auto Scaling group workers"),
    (autoscaling, "describe_warm_pool", (ASG,), "describe_warm_pool", {"AutoScalingGroupName": ASG},
     {"WarmPoolConfiguration": {"MinSize": 1, "PoolState": "Stopped"}, "Instances": [dict(
         InstanceId="i-1", AvailabilityZone="us-west-2a", LifecycleState="Warmed:Stopped", HealthStatus="Healthy",
         ProtectedFromScaleIn=False)]},
     {"MinSize": 1, "PoolState": "Stopped", "instances": 1}, "describe the warm pool of Auto Scaling group workers"),
    (autoscaling, "describe_lifecycle_hooks", (ASG,), "describe_lifecycle_hooks", {"AutoScalingGroupName": ASG},
     {"LifecycleHooks": [{"LifecycleHookName": "drain"}]}, [{"LifecycleHookName": "drain"}],
     "describe the lifecycle hooks of Auto Scaling group workers"),
    (autoscaling, "create_or_update_tags", (ASG, {"k1": "v1", "k2": "v2"}), "create_or_update_tags",
     {"Tags": [group_tag("k1", "v1"), group_tag("k2", "v2")]}, {}, None, "set tags k1, k2 on Auto Scaling group workers"),
    (autoscaling, "delete_tags", (ASG, ["k1"]), "delete_tags",
     {"Tags": [dict(ResourceId=ASG, ResourceType="auto-scaling-group", Key="k1")]}, {}, None,
     "delete tags k1 from Auto Scaling group workers"),
    (ec2, "describe_instances", (["i-1", "i-2"],), "describe_instances", {"InstanceIds": ["i-1", "i-2"]},
     {"Reservations": [{"Instances": [{"InstanceId": "i-1"}]}, {"Instances": [{"InstanceId": "i-2"}]}]},
     [{"InstanceId": "i-1"}, {"InstanceId": "i-2"}], "describe 2 EC2 instances"),
    (ec2, "describe_launch_template", (LT,), "describe_launch_templates", {"LaunchTemplateIds": [LT]},
     {"LaunchTemplates": [{"LaunchTemplateId": LT}]}, {"LaunchTemplateId": LT}, "describe launch template %s" % LT),
    (ec2, "describe_launch_template_named", ("nodes",), "describe_launch_templates",
     {"LaunchTemplateNames": ["nodes"]}, {"LaunchTemplates": []}, None, "describe launch template nodes"),
    (ec2, "describe_launch_template_version", (LT, 4), "describe_launch_template_versions",
     {"LaunchTemplateId": LT, "Versions": ["4"], "ResolveAlias": False}, {"LaunchTemplateVersions": [{"VersionNumber": 4}]},
     {"VersionNumber": 4}, "describe version 4 of launch template %s" % LT),
    (ec2, "describe_launch_template_versions", (LT, ["$Latest", "4", "$Latest"]), "describe_launch_template_versions",
     {"LaunchTemplateId": LT, "Versions": ["$Latest", "4"], "ResolveAlias": True},
     {"LaunchTemplateVersions": [{"VersionNumber": 7}, {"VersionNumber": 4}]},
     [{"VersionNumber": 7}, {"VersionNumber": 4}], "describe versions $Latest, 4, $Latest of launch template %s" % LT),
    (ec2, "describe_images", (["ami-1", "ami-2"],), "describe_images",
     {"Filters": [{"Name": "image-id", "Values": ["ami-1", "ami-2"]}]}, {"Images": [{"ImageId": "ami-1"}]},
     [{"ImageId": "ami-1"}], "describe 2 AMIs"),
    (ec2, "describe_image", ("ami-1",), "describe_images", {"ImageIds": ["ami-1"]}, {"Images": []}, None,
     "describe AMI ami-1"),
    (ec2, "describe_instance_type_architectures", (["m5.large", "m6g.large", "m5.large"],), "describe_instance_types",
     {"InstanceTypes": ["m5.large", "m6g.large"]},
     {"InstanceTypes": [{"InstanceType": "m5.large", "ProcessorInfo": {"SupportedArchitectures": ["x86_64"]}},
                        {"InstanceType": "m6g.large", "ProcessorInfo": {"SupportedArchitectures": ["arm64"]}}]},
     {"m5.large": ["x86_64"], "m6g.large": ["arm64"]}, "describe instance types m5.large, m6g.large, m5.large"),
    (ec2, "create_launch_template_version", (LT, 3, "ami-2", "new AMI"), "create_launch_template_version",
     {"LaunchTemplateId": LT, "SourceVersion": "3", "VersionDescription": "new AMI",
      "LaunchTemplateData": {"ImageId": "ami-2"}}, {"LaunchTemplateVersion": {"VersionNumber": 5}}, 5,
     "create a version of launch template %s from version 3 with AMI ami-2" % LT),
    (ec2, "set_default_launch_template_version", (LT, 5), "modify_launch_template",
     {"LaunchTemplateId": LT, "DefaultVersion": "5"}, {}, None,
     "set the default version of launch template %s to 5" % LT),
    (eks, "describe_cluster", ("prod",), "describe_cluster", {"name": "prod"}, {"cluster": {"name": "prod"}},
     {"name": "prod"}, "describe EKS cluster prod"),
    (eks, "describe_nodegroup", ("prod", "ng-1"), "describe_nodegroup", NAMES, {"nodegroup": {"nodegroupName": "ng-1"}},
     {"nodegroupName": "ng-1"}, "describe EKS node group ng-1"),
    (eks, "list_clusters", (), "list_clusters", {"maxResults": 100}, {"clusters": ["prod", "dev"]}, ["prod", "dev"],
     "list the EKS clusters"),
    (eks, "list_nodegroups", ("prod",), "list_nodegroups", {"clusterName": "prod", "maxResults": 100},
     {"nodegroups": ["ng-1"]}, ["ng-1"], "list the managed node groups of cluster prod"),
    (eks, "describe_update", ("prod", "ng-1", "u-1"), "describe_update",
     {"name": "prod", "nodegroupName": "ng-1", "updateId": "u-1"}, {"update": UPDATE}, UPDATE,
     "describe update u-1 of node group ng-1"),
    (eks, "list_updates", ("prod", "ng-1"), "list_updates", {"name": "prod", "nodegroupName": "ng-1"},
     {"updateIds": ["u-1", "u-2"]}, ["u-1", "u-2"], "list the updates of node group ng-1"),
    (eks, "update_nodegroup_config", (dict(NAMES, updateConfig={"maxUnavailable": 2}),), "update_nodegroup_config",
     dict(NAMES, updateConfig={"maxUnavailable": 2}), {"update": UPDATE}, UPDATE,
     "update the updateConfig of node group ng-1"),
    (eks, "update_nodegroup_version", (dict(NAMES, releaseVersion="1.31.0-20261101"),), "update_nodegroup_version",
     dict(NAMES, releaseVersion="1.31.0-20261101"), {"update": UPDATE}, UPDATE, "update the version of node group ng-1"),
    (elbv2, "describe_target_groups", (), "describe_target_groups", {},
     {"TargetGroups": [{"TargetGroupArn": TG_ARN, "TargetType": "instance"}]},
     [{"TargetGroupArn": TG_ARN, "TargetType": "instance"}], "describe the target groups"),
    (elbv2, "describe_tags", ([TG_ARN],), "describe_tags", {"ResourceArns": [TG_ARN]},
     {"TagDescriptions": [{"ResourceArn": TG_ARN, "Tags": [{"Key": "elbv2.k8s.aws/cluster", "Value": "prod"}]}]},
     {TG_ARN: {"elbv2.k8s.aws/cluster": "prod"}}, "describe the tags of 1 target group(s)"),
    (elbv2, "describe_target_health", (TG_ARN,), "describe_target_health", {"TargetGroupArn": TG_ARN},
     {"TargetHealthDescriptions": [DRAINING_TARGET]}, [DRAINING_TARGET],
     "describe the targets of target group %s" % TG_ARN),
    (elbv2, "describe_target_group_attributes", (TG_ARN,), "describe_target_group_attributes",
     {"TargetGroupArn": TG_ARN}, {"Attributes": [{"Key": "deregistration_delay.timeout_seconds", "Value": "20"}]},
     {"deregistration_delay.timeout_seconds": "20"}, "describe the attributes of target group %s" % TG_ARN),
    (elb, "describe_load_balancers", (), "describe_load_balancers", {},
     {"LoadBalancerDescriptions": [{"LoadBalancerName": "web"}]}, [{"LoadBalancerName": "web"}],
     "describe the Classic Load Balancers"),
    (elb, "describe_tags", (["web"],), "describe_tags", {"LoadBalancerNames": ["web"]},
     {"TagDescriptions": [{"LoadBalancerName": "web", "Tags": [{"Key": "kubernetes.io/cluster/prod", "Value": "owned"}]}]},
     {"web": {"kubernetes.io/cluster/prod": "owned"}}, "describe the tags of 1 Classic Load Balancer(s)"),
    (elb, "describe_instance_health", ("web", ["i-1"]), "describe_instance_health",
     {"LoadBalancerName": "web", "Instances": [{"InstanceId": "i-1"}]},
     {"InstanceStates": [CLASSIC_DRAINING]}, [CLASSIC_DRAINING], "describe instances i-1 of Classic Load Balancer web"),
    (elb, "describe_load_balancer_attributes", ("web",), "describe_load_balancer_attributes",
     {"LoadBalancerName": "web"}, {"LoadBalancerAttributes": {"ConnectionDraining": {"Enabled": True, "Timeout": 5}}},
     {"ConnectionDraining": {"Enabled": True, "Timeout": 5}}, "describe the attributes of Classic Load Balancer web"),
    (ssm, "get_parameter", ("/aws/service/eks/x",), "get_parameter", {"Name": "/aws/service/eks/x"},
     {"Parameter": {"Value": "ami-9\n"}}, "ami-9", "read SSM parameter /aws/service/eks/x"),
    (sts, "assume_role", (ROLE_ARN, "inventory"), "assume_role", {"RoleArn": ROLE_ARN, "RoleSessionName": "inventory"},
     {"Credentials": {"AccessKeyId": "ASIA0123456789ABCDEF", "SecretAccessKey": "secret", "SessionToken": "token",
                      "Expiration": datetime.datetime(2026, 1, 1, tzinfo=datetime.timezone.utc)}},
     {"access_key": "ASIA0123456789ABCDEF", "secret_key": "secret", "session_token": "token"},
     "assume role %s" % ROLE_ARN),
    (sts, "caller_account", (), "get_caller_identity", {},
     {"UserId": "AROA0123456789:ansible", "Account": "123456789012", "Arn": "arn:aws:sts::123456789012:assumed-role/r/ansible"},
     {"account": "123456789012", "arn": "arn:aws:sts::123456789012:assumed-role/r/ansible"}, "get the caller's identity"),
]
IDS = ["%s.%s-%d" % (case[0].__name__.rsplit(".", 1)[-1], case[1], index) for index, case in enumerate(CASES)]


def stubbed(module):
    client = boto3.client(module.__name__.rsplit(".", 1)[-1], region_name="us-west-2", aws_access_key_id="testing",
                          aws_secret_access_key="testing")
    return client, Stubber(client)


def test_every_aws_api_function_has_a_case():
    functions = set()
    for module in (autoscaling, ec2, eks, elb, elbv2, ssm, sts):
        functions.update((module, name) for name, value in vars(module).items()
                         if inspect.isfunction(value) and value.__module__ == module.__name__
                         and not name.startswith("_"))
    assert functions == {(case[0], case[1]) for case in CASES}


@pytest.mark.parametrize("module, name, args, operation, request_, response, expected, _words", CASES, ids=IDS)
def test_the_call_sends_a_valid_request_and_reads_the_answer(module, name, args, operation, request_, response,
                                                             expected, _words):
    client, stubber = stubbed(module)
    stubber.add_response(operation, response, request_)
    with stubber:
        assert getattr(module, name)(client, *args) == expected
    stubber.assert_no_pending_responses()


@pytest.mark.parametrize("module, name, args, operation, _request, _response, _expected, words", CASES, ids=IDS)
def test_a_refusal_is_an_upgrade_error_naming_the_arguments(module, name, args, operation, _request, _response,
                                                            _expected, words):
    client, stubber = stubbed(module)
    stubber.add_client_error(operation, service_error_code="AccessDeniedException", service_message="no",
                             http_status_code=403)
    with stubber, pytest.raises(UpgradeError) as raised:
        getattr(module, name)(client, *args)
    assert raised.value.code == "AccessDenied"
    assert words in raised.value.msg and raised.value.msg.endswith("failed: AccessDeniedException: no")


@pytest.mark.parametrize("call", [
    lambda client: autoscaling.suspend_processes(client, ASG, []),
    lambda client: autoscaling.resume_processes(client, ASG, ()),
    lambda client: autoscaling.delete_tags(client, ASG, []),
])
def test_nothing_to_do_sends_no_request(call):
    client, stubber = stubbed(autoscaling)
    with stubber:
        call(client)
    stubber.assert_no_pending_responses()


@pytest.mark.parametrize("module", [elb, elbv2])
def test_tags_are_asked_twenty_at_a_time_and_none_for_none(module):
    """DescribeTags of both APIs takes at most 20 resources (ELB and ELBv2 API references)."""
    names = ["%s-%02d" % (TG_ARN if module is elbv2 else "web", index) for index in range(45)]
    key = "ResourceArns" if module is elbv2 else "LoadBalancerNames"
    id_key = "ResourceArn" if module is elbv2 else "LoadBalancerName"
    client, stubber = stubbed(module)
    for start in (0, 20, 40):
        chunk = names[start:start + 20]
        stubber.add_response("describe_tags", {"TagDescriptions": [{id_key: name, "Tags": [{"Key": "k", "Value": name}]}
                                                                   for name in chunk]}, {key: chunk})
    with stubber:
        assert module.describe_tags(client, names) == dict((name, {"k": name}) for name in names)
        assert module.describe_tags(client, []) == {}
    stubber.assert_no_pending_responses()
