# -*- coding: utf-8 -*-
# Copyright: Contributors to the eksops.nodegroup project
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""eks_nodegroup_update run in-process against real botocore clients wrapped in botocore.stub.Stubber (SPEC K3,
K5, K6, U7, U8).

The Stubber checks every request against what the test expects and every canned answer against the EKS, SSM
and Auto Scaling service models, so the answers below are shaped exactly as AWS sends them. Each client also
records the operations the module called: refusals and check mode must call no Update* operation.
"""

from __future__ import annotations

import datetime
from unittest import mock

import pytest
from botocore.stub import Stubber

from ansible_collections.eksops.nodegroup.plugins.module_utils.host import clock as clocks
from ansible_collections.eksops.nodegroup.plugins.module_utils.steps import eks_nodegroup_update as managed_update_step
from ansible_collections.eksops.nodegroup.plugins.module_utils.host.module import EksopsModule
from ansible_collections.eksops.nodegroup.plugins.modules import eks_nodegroup_update

from ..fakes import FakeClock, FakeCluster, make_pod, node
from ..moto_nodegroup import moto_client, run_module_in_process

CLUSTER = "demo"
NODEGROUP = "workers"
ASG = "eks-workers-6ec5c4f3-8ec0-78ca-429c-84bcfac2302e"
EKS_LT = "lt-0eks0000000000001"
USER_LT = "lt-0user000000000001"
RELEASE_130 = "1.30.4-20240917"
RELEASE_131 = "1.31.3-20250103"
SSM_RELEASE_131 = "/aws/service/eks/optimized-ami/1.31/amazon-linux-2023/x86_64/standard/recommended/release_version"
CREATED = datetime.datetime(2025, 1, 6, 9, 30, tzinfo=datetime.timezone.utc)
NAMES = dict(clusterName=CLUSTER, nodegroupName=NODEGROUP)
UPDATE_NAMES = dict(name=CLUSTER, nodegroupName=NODEGROUP)
BASE = dict(cluster_name=CLUSTER, nodegroup_name=NODEGROUP, poll_interval=15)
BLOCKED_NODE = "ip-192-168-1-20.us-west-2.compute.internal"


def assert_enums_valid(value, shape, path):
    """The Stubber checks names, types and required members; this adds the enum values (statuses, types)."""
    if shape.type_name == "structure":
        for name, member in value.items():
            assert_enums_valid(member, shape.members[name], "%s.%s" % (path, name))
    elif shape.type_name == "list":
        for item in value:
            assert_enums_valid(item, shape.member, path + "[]")
    elif shape.type_name == "string" and shape.enum:
        assert value in shape.enum, "%s: %r is not one of the model's %s" % (path, value, shape.name)


class StubbedAws:
    """One stubbed client per service, as EksopsModule.aws would build them, and the operations called."""

    def __init__(self):
        self.calls = []
        self.clients = {}
        self.stubs = {}
        for service in ("eks", "ssm", "autoscaling", "ec2"):
            client = moto_client(service)  # Stubbed: moto never answers it
            # Recorded before the Stubber sees the call, so an unexpected call is recorded too.
            client.meta.events.register("provide-client-params.%s.*" % service,
                                        lambda model, **kwargs: self.calls.append(model.name))
            self.clients[service] = client
            self.stubs[service] = Stubber(client)

    def expect(self, service, operation, answer, params=None):
        client = self.clients[service]
        output_shape = client.meta.service_model.operation_model(client.meta.method_to_api_mapping[operation]) \
            .output_shape
        assert_enums_valid(answer, output_shape, operation)
        self.stubs[service].add_response(operation, answer, params)

    def expect_error(self, service, operation, code, message, status, params=None):
        self.stubs[service].add_client_error(operation, service_error_code=code, service_message=message,
                                             http_status_code=status, expected_params=params)

    def aws(self, service):
        return self.clients[service]

    @property
    def update_calls(self):
        return [call for call in self.calls if call.startswith("Update")]

    def assert_all_used(self):
        for stub in self.stubs.values():
            stub.assert_no_pending_responses()


@pytest.fixture
def aws():
    stubbed = StubbedAws()
    for stub in stubbed.stubs.values():
        stub.activate()
    yield stubbed
    for stub in stubbed.stubs.values():
        stub.deactivate()


@pytest.fixture
def clock():
    return FakeClock()


@pytest.fixture
def kube():
    """The cluster's API, read after a PodEvictionFailure (the pods on the nodes EKS names and their budgets)."""
    return FakeCluster(nodes=[node(BLOCKED_NODE)])


@pytest.fixture
def run(aws, clock, kube, capsys):
    def run_it(check=False, diff=False, **args):
        with mock.patch.object(EksopsModule, "aws", lambda self, service: aws.aws(service)), \
                mock.patch.object(EksopsModule, "core_v1", lambda self: kube), \
                mock.patch.object(clocks, "SYSTEM_CLOCK", clock):
            return run_module_in_process(eks_nodegroup_update.main, dict(BASE, **args), capsys, check=check,
                                         diff=diff)
    return run_it


# --- AWS answers ----------------------------------------------------------------------------------------

def nodegroup(**overrides):
    """DescribeNodegroup: an ACTIVE AL2023 managed group on 1.30, EKS's own launch template."""
    group = dict(
        nodegroupName=NODEGROUP, clusterName=CLUSTER,
        nodegroupArn="arn:aws:eks:us-west-2:123456789012:nodegroup/demo/workers/6ec5c4f3-8ec0-78ca-429c-84bcfac2302e",
        version="1.30", releaseVersion=RELEASE_130, createdAt=CREATED, modifiedAt=CREATED, status="ACTIVE",
        capacityType="ON_DEMAND", scalingConfig={"minSize": 2, "maxSize": 6, "desiredSize": 3},
        instanceTypes=["m5.large"], subnets=["subnet-0a", "subnet-0b", "subnet-0c"], amiType="AL2023_x86_64_STANDARD",
        nodeRole="arn:aws:iam::123456789012:role/eks-node", labels={}, diskSize=20,
        resources={"autoScalingGroups": [{"name": ASG}]}, health={"issues": []},
        updateConfig={"maxUnavailable": 1, "updateStrategy": "DEFAULT"}, tags={})
    group.update(overrides)
    return {"nodegroup": group}


def custom_lt_nodegroup(ami_type="CUSTOM", lt_version="3", **overrides):
    """A group created with the user's launch template (EKS runs its own copy of it)."""
    overrides.setdefault("releaseVersion", "ami-0a1b2c3d4e5f60001" if ami_type == "CUSTOM" else RELEASE_130)
    answer = nodegroup(amiType=ami_type, launchTemplate={"id": USER_LT, "name": "workers-lt", "version": lt_version},
                       **overrides)
    for absent in ("instanceTypes", "diskSize"):
        del answer["nodegroup"][absent]
    return answer


def cluster(version="1.31"):
    return {"cluster": {"name": CLUSTER, "arn": "arn:aws:eks:us-west-2:123456789012:cluster/demo",
                        "version": version, "status": "ACTIVE", "platformVersion": "eks.5",
                        "endpoint": "https://ABCDEF.gr7.us-west-2.eks.amazonaws.com", "createdAt": CREATED}}


def eks_update(update_id, status="InProgress", type_="VersionUpdate", errors=None, **params):
    return {"update": {"id": update_id, "status": status, "type": type_, "createdAt": CREATED,
                       "params": [{"type": key, "value": value} for key, value in params.items()],
                       "errors": errors or []}}


def ssm_parameter(name, value):
    return {"Parameter": {"Name": name, "Type": "String", "Value": value, "Version": 12, "DataType": "text",
                          "LastModifiedDate": CREATED, "ARN": "arn:aws:ssm:us-west-2::parameter" + name}}


def auto_scaling_group(version, instances):
    """DescribeAutoScalingGroups: EKS's group on its launch template at ``version``; ``instances`` is a list of
    (lifecycle state, launch template version it was launched from)."""
    return {"AutoScalingGroups": [{
        "AutoScalingGroupName": ASG, "MinSize": 2, "MaxSize": 6, "DesiredCapacity": len(instances),
        "DefaultCooldown": 300, "AvailabilityZones": ["us-west-2a", "us-west-2b", "us-west-2c"],
        "HealthCheckType": "EC2", "CreatedTime": CREATED,
        "LaunchTemplate": {"LaunchTemplateId": EKS_LT, "LaunchTemplateName": "eks-6ec5c4f3", "Version": version},
        "Instances": [{"InstanceId": "i-%017d" % index, "InstanceType": "m5.large",
                       "AvailabilityZone": "us-west-2%s" % "abc"[index % 3], "LifecycleState": state,
                       "HealthStatus": "Healthy", "ProtectedFromScaleIn": False,
                       "LaunchTemplate": {"LaunchTemplateId": EKS_LT, "LaunchTemplateName": "eks-6ec5c4f3",
                                          "Version": launched}}
                      for index, (state, launched) in enumerate(instances)]}]}


def expect_reads(aws, group=None, cluster_version="1.31", updates=(), release=RELEASE_131):
    """The reads before any decision: cluster, node group, SSM release (kubernetes_version 1.31), updates."""
    aws.expect("eks", "describe_cluster", cluster(cluster_version), {"name": CLUSTER})
    aws.expect("eks", "describe_nodegroup", group or nodegroup(), NAMES)
    if release:
        aws.expect("ssm", "get_parameter", ssm_parameter(SSM_RELEASE_131, release), {"Name": SSM_RELEASE_131})
    aws.expect("eks", "list_updates", {"updateIds": [answer["update"]["id"] for answer in updates]}, UPDATE_NAMES)
    for answer in updates:
        aws.expect("eks", "describe_update", answer, dict(UPDATE_NAMES, updateId=answer["update"]["id"]))


def expect_describe_update(aws, answer):
    aws.expect("eks", "describe_update", answer, dict(UPDATE_NAMES, updateId=answer["update"]["id"]))


def expect_progress(aws, version="1", instances=(("InService", "1"),) * 3):
    aws.expect("autoscaling", "describe_auto_scaling_groups", auto_scaling_group(version, list(instances)),
               {"AutoScalingGroupNames": [ASG]})


# --- Refusals: each names its parameter and comes before any change ---------------------------------------

def test_two_targets_are_refused_before_any_aws_call(aws, run):
    result = run(kubernetes_version="1.31", image_id="ami-0123456789abcdef0")
    assert result["failed"] and result["parameter"] == "kubernetes_version/image_id"
    assert aws.calls == []


@pytest.mark.parametrize("args, group, parameter, says", [
    (dict(image_id="ami-0123456789abcdef0"), nodegroup(), "image_id", "kubernetes_version or release_version"),
    (dict(image_id="ami-0123456789abcdef0"), custom_lt_nodegroup(), "image_id", "launch_template_version"),
    (dict(kubernetes_version="1.32"), nodegroup(), "kubernetes_version", "newer than the control plane"),
    (dict(kubernetes_version="1.29"), nodegroup(), "kubernetes_version", "roll"),
    (dict(release_version="1.32.0-20250301"), nodegroup(), "release_version", "newer than the control plane"),
    (dict(kubernetes_version="1.31"), custom_lt_nodegroup(), "kubernetes_version", "launch_template_version"),
    (dict(launch_template_version=4), nodegroup(), "launch_template_version", "without a launch template"),
])
def test_refusals_name_their_parameter_and_change_nothing(aws, run, args, group, parameter, says):
    aws.expect("eks", "describe_cluster", cluster("1.31"), {"name": CLUSTER})
    aws.expect("eks", "describe_nodegroup", group, NAMES)
    result = run(**args)
    assert result["failed"] is True and result["parameter"] == parameter, result
    assert says in result["msg"], result["msg"]
    assert aws.update_calls == []
    aws.assert_all_used()


def test_no_ami_published_for_the_version_is_refused(aws, run):
    aws.expect("eks", "describe_cluster", cluster("1.31"), {"name": CLUSTER})
    aws.expect("eks", "describe_nodegroup", nodegroup(), NAMES)
    aws.expect_error("ssm", "get_parameter", "ParameterNotFound", "Parameter not found", 400,
                     {"Name": SSM_RELEASE_131})
    result = run(kubernetes_version="1.31")
    assert result["failed"] and result["parameter"] == "kubernetes_version" and SSM_RELEASE_131 in result["msg"]
    assert aws.update_calls == []


@pytest.mark.parametrize("missing, parameter", [("describe_cluster", "cluster_name"),
                                                ("describe_nodegroup", "nodegroup_name")])
def test_unknown_cluster_or_self_managed_group_is_named(aws, run, missing, parameter):
    if missing == "describe_nodegroup":
        aws.expect("eks", "describe_cluster", cluster(), {"name": CLUSTER})
        params = NAMES
    else:
        params = {"name": CLUSTER}
    aws.expect_error("eks", missing, "ResourceNotFoundException", "No node group found for name: workers.", 404,
                     params)
    result = run(kubernetes_version="1.31")
    assert result["failed"] and result["parameter"] == parameter, result
    assert aws.update_calls == []


def test_another_update_in_progress_is_refused_naming_it(aws, run):
    scaling = eks_update("7a1c0000-0000-4000-8000-000000000001", type_="ConfigUpdate", DesiredSize="6")
    older = eks_update("7a1c0000-0000-4000-8000-000000000000", status="Successful", Version="1.30",
                       ReleaseVersion=RELEASE_130)
    expect_reads(aws, updates=[older, scaling])
    result = run(kubernetes_version="1.31", max_unavailable=2)
    assert result["failed"] is True and result["code"] == "ResourceInUseException"
    assert "7a1c0000-0000-4000-8000-000000000001" in result["msg"] and "ConfigUpdate" in result["msg"]
    assert "DesiredSize=6" in result["msg"]
    assert aws.update_calls == []
    aws.assert_all_used()


def test_eks_resource_in_use_answer_becomes_a_clear_message(aws, run):
    expect_reads(aws)
    aws.expect_error("eks", "update_nodegroup_version", "ResourceInUseException",
                     "Nodegroup workers is currently updating", 409, dict(NAMES, force=False, version="1.31"))
    result = run(kubernetes_version="1.31")
    assert result["failed"] and result["code"] == "ResourceInUseException"
    assert "another update in progress" in result["msg"] and "Nodegroup workers is currently updating" in result["msg"]
    assert result["changed"] is False


# --- Nothing to do (K5) ---------------------------------------------------------------------------------

def test_a_group_on_the_target_changes_nothing_and_says_so(aws, run):
    done = eks_update("5b2d0000-0000-4000-8000-000000000000", status="Successful", Version="1.31",
                      ReleaseVersion=RELEASE_131)
    expect_reads(aws, group=nodegroup(version="1.31", releaseVersion=RELEASE_131), updates=[done])
    expect_progress(aws)
    result = run(kubernetes_version="1.31", max_unavailable=5, diff=True)
    assert result["changed"] is False and result["nodegroup_update"]["finished"] is True, result
    assert "already on the target" in result["msg"]
    assert result["nodegroup_update"]["plan"]["action"] == "none" and result["nodegroup_update"]["eks_update"] is None
    assert result["nodegroup_update"]["progress"] == dict(nodes_total=3, nodes_updated=3)
    assert result["diff"]["before"] == result["diff"]["after"]
    assert aws.update_calls == []
    aws.assert_all_used()


# --- Config update, then version update -------------------------------------------------------------------

def test_config_update_then_version_update_followed_to_success(aws, run, clock):
    config_id, version_id = "c0nf0000-0000-4000-8000-000000000001", "5e70000-0000-4000-8000-000000000002"
    expect_reads(aws)
    aws.expect("eks", "update_nodegroup_config",
               eks_update(config_id, type_="ConfigUpdate", MaxUnavailable="3", UpdateStrategy="MINIMAL"),
               dict(NAMES, updateConfig={"maxUnavailable": 3, "updateStrategy": "MINIMAL"}))
    expect_describe_update(aws, eks_update(config_id, status="Successful", type_="ConfigUpdate", MaxUnavailable="3",
                                           UpdateStrategy="MINIMAL"))
    aws.expect("eks", "update_nodegroup_version", eks_update(version_id, Version="1.31", ReleaseVersion=RELEASE_131),
               dict(NAMES, force=False, version="1.31"))
    expect_describe_update(aws, eks_update(version_id, Version="1.31", ReleaseVersion=RELEASE_131))
    expect_describe_update(aws, eks_update(version_id, status="Successful", Version="1.31",
                                           ReleaseVersion=RELEASE_131))
    aws.expect("eks", "describe_nodegroup", nodegroup(
        version="1.31", releaseVersion=RELEASE_131,
        updateConfig={"maxUnavailable": 3, "updateStrategy": "MINIMAL"}), NAMES)
    expect_progress(aws, version="2", instances=[("InService", "2")] * 3)

    result = run(kubernetes_version="1.31", max_unavailable=3, update_strategy="minimal", diff=True)
    assert result["changed"] is True and result["nodegroup_update"]["finished"] is True, result
    assert aws.update_calls == ["UpdateNodegroupConfig", "UpdateNodegroupVersion"]
    assert result["nodegroup_update"]["eks_update"]["id"] == version_id and result["nodegroup_update"]["eks_update"]["status"] == "Successful"
    assert result["nodegroup_update"]["eks_update"]["created_at"] == "2025-01-06T09:30:00+00:00"
    assert result["nodegroup_update"]["plan"]["expected_release_version"] == RELEASE_131
    assert result["nodegroup_update"]["nodegroup"]["version"] == "1.31" and result["nodegroup_update"]["nodegroup"]["release_version"] == RELEASE_131
    assert result["nodegroup_update"]["progress"] == dict(nodes_total=3, nodes_updated=3)
    assert "is on kubernetes_version 1.31" in result["msg"]
    assert result["diff"]["before"]["update_config"]["update_strategy"] == "DEFAULT"
    assert result["diff"]["after"] == dict(
        version="1.31", release_version=RELEASE_131, launch_template_version=None,
        update_config=dict(max_unavailable=3, max_unavailable_percentage=None, update_strategy="MINIMAL"))
    assert clock.sleeps == [15, 15, 15]
    aws.assert_all_used()


def expect_lt_version(aws, version):
    """The custom launch template's version, described before any change (K5)."""
    aws.expect("ec2", "describe_launch_template_versions", {"LaunchTemplateVersions": [{
        "LaunchTemplateId": USER_LT, "LaunchTemplateName": "workers-lt", "VersionNumber": int(version),
        "DefaultVersion": False, "CreateTime": CREATED, "LaunchTemplateData": {"InstanceType": "m5.large"}}]},
        {"LaunchTemplateId": USER_LT, "Versions": [version], "ResolveAlias": False})


def test_a_launch_template_version_that_does_not_exist_is_refused_before_any_change(aws, run):
    aws.expect("eks", "describe_cluster", cluster("1.31"), {"name": CLUSTER})
    aws.expect("eks", "describe_nodegroup", custom_lt_nodegroup(), NAMES)
    aws.expect("ec2", "describe_launch_template_versions", {"LaunchTemplateVersions": []},
               {"LaunchTemplateId": USER_LT, "Versions": ["9"], "ResolveAlias": False})
    result = run(launch_template_version=9, max_unavailable=3)
    assert result["failed"] and result["parameter"] == "launch_template_version", result
    assert aws.update_calls == []


def test_launch_template_version_of_a_custom_template_with_force(aws, run):
    update_id = "17000000-0000-4000-8000-000000000003"
    expect_reads(aws, group=custom_lt_nodegroup(), release=None)
    expect_lt_version(aws, "4")
    aws.expect("eks", "update_nodegroup_version",
               eks_update(update_id, LaunchTemplateName="workers-lt", LaunchTemplateVersion="4"),
               dict(NAMES, force=True, launchTemplate={"id": USER_LT, "version": "4"}))
    expect_describe_update(aws, eks_update(update_id, status="Successful", LaunchTemplateName="workers-lt",
                                           LaunchTemplateVersion="4"))
    aws.expect("eks", "describe_nodegroup", custom_lt_nodegroup(lt_version="4", releaseVersion="ami-0a1b2c3d4e5f60002"),
               NAMES)
    expect_progress(aws, version="5", instances=[("InService", "5")] * 2)
    result = run(launch_template_version=4, force=True)
    assert result["changed"] and result["nodegroup_update"]["finished"], result
    assert result["nodegroup_update"]["nodegroup"]["launch_template"] == dict(id=USER_LT, name="workers-lt", version="4")
    assert aws.update_calls == ["UpdateNodegroupVersion"]
    aws.assert_all_used()


def test_release_version_sends_its_kubernetes_version(aws, run):
    expect_reads(aws, release=None)
    aws.expect("eks", "update_nodegroup_version", eks_update("r1", Version="1.31", ReleaseVersion=RELEASE_131),
               dict(NAMES, force=False, releaseVersion=RELEASE_131, version="1.31"))
    aws.expect("eks", "describe_nodegroup", nodegroup(status="UPDATING"), NAMES)
    expect_progress(aws)
    result = run(release_version=RELEASE_131, wait=False)
    assert result["changed"] is True and result["nodegroup_update"]["finished"] is False, result
    assert result["nodegroup_update"]["eks_update"]["status"] == "InProgress" and "still InProgress" in result["msg"]
    aws.assert_all_used()


# --- Following an update in progress ------------------------------------------------------------------------

def test_our_update_in_progress_is_followed_not_started_again(aws, run):
    running = eks_update("f0110000-0000-4000-8000-000000000004", Version="1.31", ReleaseVersion=RELEASE_131)
    expect_reads(aws, group=nodegroup(status="UPDATING"), updates=[running])
    expect_describe_update(aws, eks_update("f0110000-0000-4000-8000-000000000004", status="Successful",
                                           Version="1.31", ReleaseVersion=RELEASE_131))
    aws.expect("eks", "describe_nodegroup", nodegroup(version="1.31", releaseVersion=RELEASE_131), NAMES)
    expect_progress(aws, version="2", instances=[("InService", "2")] * 3)
    result = run(kubernetes_version="1.31", max_unavailable=4)
    assert result["changed"] is False and result["nodegroup_update"]["finished"] is True, result
    assert result["nodegroup_update"]["plan"]["action"] == "follow"
    assert result["nodegroup_update"]["eks_update"]["id"] == "f0110000-0000-4000-8000-000000000004"
    assert aws.update_calls == []
    aws.assert_all_used()


def test_our_config_update_in_progress_is_waited_for_then_the_version_update_starts(aws, run):
    """A rerun after wait_timeout ended a run during the configuration update."""
    config = eks_update("c0nf", type_="ConfigUpdate", MaxUnavailable="2", UpdateStrategy="DEFAULT")
    expect_reads(aws, updates=[config])
    expect_describe_update(aws, eks_update("c0nf", status="Successful", type_="ConfigUpdate", MaxUnavailable="2",
                                           UpdateStrategy="DEFAULT"))
    aws.expect("eks", "update_nodegroup_version", eks_update("v1", Version="1.31"),
               dict(NAMES, force=False, version="1.31"))
    aws.expect("eks", "describe_nodegroup", nodegroup(status="UPDATING"), NAMES)
    expect_progress(aws)
    result = run(kubernetes_version="1.31", max_unavailable=2, wait=False)
    assert aws.update_calls == ["UpdateNodegroupVersion"]
    assert result["nodegroup_update"]["plan"]["pending_config_update_id"] == "c0nf" and result["changed"] is True
    aws.assert_all_used()


# --- Check mode -------------------------------------------------------------------------------------------

def test_check_mode_shows_the_plan_and_calls_no_update(aws, run):
    expect_reads(aws)
    expect_progress(aws)
    result = run(kubernetes_version="1.31", max_unavailable_percentage=25, force=True, check=True, diff=True)
    assert result["changed"] is True and result["nodegroup_update"]["finished"] is False, result
    plan = result["nodegroup_update"]["plan"]
    assert plan["action"] == "start"
    assert plan["config_update"] == dict(NAMES, updateConfig={"maxUnavailablePercentage": 25,
                                                              "updateStrategy": "DEFAULT"})
    assert plan["version_update"] == dict(NAMES, force=True, version="1.31")
    assert result["diff"]["after"]["version"] == "1.31"
    assert result["diff"]["after"]["release_version"] == RELEASE_131
    assert result["diff"]["after"]["update_config"]["max_unavailable_percentage"] == 25
    assert aws.update_calls == []
    aws.assert_all_used()


# --- EKS's failures and wait_timeout --------------------------------------------------------------------------

def test_a_failed_update_fails_with_eks_error_code_and_message(aws, run, kube):
    """Issue 29 item 3: EKS names the node only; the module names the pod and the budget that held it there."""
    kube.pods.put(make_pod("billing-7f9c", node=BLOCKED_NODE, labels={"app": "billing"}))
    kube.pods.put(make_pod("aws-node-x2", node=BLOCKED_NODE, owner="DaemonSet"))
    kube.pdbs.put({"metadata": {"name": "billing", "namespace": "default"},
                   "spec": {"selector": {"matchLabels": {"app": "billing"}}, "minAvailable": 1},
                   "status": {"disruptionsAllowed": 0, "currentHealthy": 1, "desiredHealthy": 1}})
    update_id = "fa110000-0000-4000-8000-000000000005"
    errors = [{"errorCode": "PodEvictionFailure",
               "errorMessage": "Reached max retries while trying to evict pods from nodes in node group workers",
               "resourceIds": [BLOCKED_NODE]}]
    expect_reads(aws)
    aws.expect("eks", "update_nodegroup_version", eks_update(update_id, Version="1.31"),
               dict(NAMES, force=False, version="1.31"))
    expect_describe_update(aws, eks_update(update_id, status="Failed", errors=errors, Version="1.31"))
    issues = [{"code": "PodEvictionFailure", "message": "Reached max retries while trying to evict pods",
               "resourceIds": ["ip-192-168-1-20.us-west-2.compute.internal"]}]
    aws.expect("eks", "describe_nodegroup", nodegroup(health={"issues": issues}), NAMES)
    expect_progress(aws, version="2", instances=[("InService", "2"), ("InService", "1"), ("InService", "1")])
    result = run(kubernetes_version="1.31")
    assert result["failed"] is True and result["code"] == "PodEvictionFailure", result
    assert "Reached max retries while trying to evict pods from nodes in node group workers" in result["msg"]
    assert "ip-192-168-1-20.us-west-2.compute.internal" in result["msg"]
    assert ("node %s: 1 pod(s) could not be evicted: default/billing-7f9c (PodDisruptionBudget billing allows no "
            "disruption; PodDisruptionBudget billing)" % BLOCKED_NODE) in result["msg"], result["msg"]
    assert result["blocking_pods"] == {BLOCKED_NODE: [dict(pod="default/billing-7f9c", pdb="billing",
                                                           reason="PodDisruptionBudget billing allows no disruption")]}
    assert result["changed"] is True and result["nodegroup_update"]["finished"] is False
    assert result["nodegroup_update"]["eks_update"]["status"] == "Failed" and result["nodegroup_update"]["eks_update"]["errors"][0]["error_code"] == \
        "PodEvictionFailure"
    assert result["nodegroup_update"]["nodegroup"]["health_issues"][0]["code"] == "PodEvictionFailure"
    assert result["nodegroup_update"]["progress"] == dict(nodes_total=3, nodes_updated=1)
    aws.assert_all_used()


def expect_a_started_update_still_running(aws, update_id):
    """A version update started by the run, described twice while it runs, and the group UPDATING at the end."""
    expect_reads(aws)
    aws.expect("eks", "update_nodegroup_version", eks_update(update_id, Version="1.31"),
               dict(NAMES, force=False, version="1.31"))
    expect_describe_update(aws, eks_update(update_id, Version="1.31"))
    expect_describe_update(aws, eks_update(update_id, Version="1.31"))
    aws.expect("eks", "describe_nodegroup", nodegroup(status="UPDATING"), NAMES)


def test_wait_timeout_returns_unfinished_not_failed(aws, run, clock):
    expect_a_started_update_still_running(aws, "71ae0000-0000-4000-8000-000000000006")
    expect_progress(aws, version="2", instances=[("InService", "2"), ("InService", "1"), ("InService", "1"),
                                                 ("Pending", "2")])
    result = run(kubernetes_version="1.31", wait_timeout=25, diff=True)
    assert not result.get("failed") and result["nodegroup_update"]["finished"] is False and result["changed"] is True, result
    assert result["nodegroup_update"]["eks_update"]["status"] == "InProgress" and "still InProgress" in result["msg"]
    assert result["nodegroup_update"]["nodegroup"]["status"] == "UPDATING"
    assert result["nodegroup_update"]["progress"] == dict(nodes_total=3, nodes_updated=1)
    assert clock.sleeps == [15, 10]
    assert result["diff"]["after"]["version"] == "1.31"
    aws.assert_all_used()


def test_wait_timeout_during_the_config_update_starts_no_version_update(aws, run, clock):
    """The version update waits for the configuration update; a rerun picks it up (the test above)."""
    expect_reads(aws)
    aws.expect("eks", "update_nodegroup_config",
               eks_update("c0nf", type_="ConfigUpdate", MaxUnavailable="2", UpdateStrategy="DEFAULT"),
               dict(NAMES, updateConfig={"maxUnavailable": 2, "updateStrategy": "DEFAULT"}))
    expect_describe_update(aws, eks_update("c0nf", type_="ConfigUpdate", MaxUnavailable="2",
                                           UpdateStrategy="DEFAULT"))
    aws.expect("eks", "describe_nodegroup", nodegroup(status="UPDATING"), NAMES)
    expect_progress(aws)
    result = run(kubernetes_version="1.31", max_unavailable=2, wait_timeout=10)
    assert result["changed"] is True and result["nodegroup_update"]["finished"] is False, result
    assert (result["nodegroup_update"]["eks_update"]["type"], result["nodegroup_update"]["eks_update"]["status"]) == ("ConfigUpdate", "InProgress")
    assert aws.update_calls == ["UpdateNodegroupConfig"] and clock.sleeps == [10]
    aws.assert_all_used()


def test_documentation_matches_the_argument_spec():
    from ansible_collections.eksops.nodegroup.plugins.module_utils.host.module import merged_argument_spec

    from ..module_docs import assert_docs_match_spec

    assert_docs_match_spec(eks_nodegroup_update, merged_argument_spec(managed_update_step.ARGUMENT_SPEC, uses_k8s=True))


def test_return_after_hands_back_progress_before_wait_timeout(aws, run, clock):
    """A role shows progress between runs: return_after ends this run early; it is not a timeout."""
    expect_a_started_update_still_running(aws, "71ae0000-0000-4000-8000-000000000007")
    expect_progress(aws)
    result = run(kubernetes_version="1.31", wait_timeout=3600, return_after=20)
    assert not result.get("failed") and result["nodegroup_update"]["finished"] is False and result["nodegroup_update"]["timed_out"] is False, result
    assert clock.sleeps == [15, 5]
    aws.assert_all_used()


def test_following_since_counts_wait_timeout_across_runs(aws, run, clock):
    """One follow spans several runs: wait_timeout counts from following_since, so a run that starts 3590 s into
    a 3600 s follow waits 10 s at most and then reports the timeout."""
    update_id = "71ae0000-0000-4000-8000-000000000008"
    running = eks_update(update_id, Version="1.31", ReleaseVersion=RELEASE_131)
    expect_reads(aws, updates=[running])
    expect_describe_update(aws, running)
    aws.expect("eks", "describe_nodegroup", nodegroup(status="UPDATING"), NAMES)
    expect_progress(aws)
    with mock.patch.object(managed_update_step.time, "time", return_value=1_800_000_000.0):
        result = run(kubernetes_version="1.31", wait_timeout=3600, following_since=1_800_000_000.0 - 3590,
                     return_after=60)
    assert not result.get("failed") and result["nodegroup_update"]["finished"] is False and result["nodegroup_update"]["timed_out"] is True, result
    assert result["nodegroup_update"]["following_since"] == 1_800_000_000.0 - 3590
    assert clock.sleeps == [10]
    aws.assert_all_used()


def follow_reads(aws, named):
    """The reads of a run given update_id: cluster, node group, SSM release, and that one update (no ListUpdates)."""
    aws.expect("eks", "describe_cluster", cluster("1.31"), {"name": CLUSTER})
    aws.expect("eks", "describe_nodegroup", nodegroup(), NAMES)
    aws.expect("ssm", "get_parameter", ssm_parameter(SSM_RELEASE_131, RELEASE_131), {"Name": SSM_RELEASE_131})
    expect_describe_update(aws, named)


def test_update_id_reports_a_failed_update_and_starts_no_other(aws, run):
    """A role follows the update it started by id: when it has failed meanwhile, the failure is reported with
    EKS's code; nothing is started again behind the caller (the group is not on the target)."""
    update_id = "f0110000-0000-4000-8000-00000000000f"
    errors = [{"errorCode": "PodEvictionFailure", "errorMessage": "Reached max retries while trying to evict pods "
               "from nodes in node group workers", "resourceIds": ["ip-10-0-1-2.us-west-2.compute.internal"]}]
    failed = eks_update(update_id, status="Failed", errors=errors, Version="1.31", ReleaseVersion=RELEASE_131)
    follow_reads(aws, failed)
    aws.expect("eks", "describe_nodegroup", nodegroup(), NAMES)
    expect_progress(aws)
    result = run(kubernetes_version="1.31", update_id=update_id)
    assert result["failed"] and result["code"] == "PodEvictionFailure", result
    assert result["nodegroup_update"]["eks_update"]["id"] == update_id
    assert aws.update_calls == [] and "ListUpdates" not in aws.calls
    aws.assert_all_used()


def test_update_id_follows_that_update_to_its_end(aws, run, clock):
    update_id = "f0110000-0000-4000-8000-000000000010"
    running = eks_update(update_id, Version="1.31", ReleaseVersion=RELEASE_131)
    follow_reads(aws, running)
    expect_describe_update(aws, eks_update(update_id, status="Successful", Version="1.31",
                                           ReleaseVersion=RELEASE_131))
    aws.expect("eks", "describe_nodegroup", nodegroup(version="1.31", releaseVersion=RELEASE_131), NAMES)
    expect_progress(aws)
    result = run(kubernetes_version="1.31", update_id=update_id, return_after=60)
    assert not result.get("failed") and result["nodegroup_update"]["finished"] and not result["changed"], result
    assert result["nodegroup_update"]["plan"]["action"] == "follow" and result["nodegroup_update"]["eks_update"]["status"] == "Successful"
    assert "ListUpdates" not in aws.calls and aws.update_calls == [] and clock.sleeps == [15]
    aws.assert_all_used()


def test_an_unknown_update_id_is_refused_naming_it(aws, run):
    aws.expect("eks", "describe_cluster", cluster("1.31"), {"name": CLUSTER})
    aws.expect("eks", "describe_nodegroup", nodegroup(), NAMES)
    aws.expect("ssm", "get_parameter", ssm_parameter(SSM_RELEASE_131, RELEASE_131), {"Name": SSM_RELEASE_131})
    aws.expect_error("eks", "describe_update", "ResourceNotFoundException", "No update found for id: nope", 404,
                     dict(UPDATE_NAMES, updateId="nope"))
    result = run(kubernetes_version="1.31", update_id="nope")
    assert result["failed"] and result["parameter"] == "update_id", result


# --- Issue 29 item 3: Windows groups move to the newest release of their version ------------------------------

SSM_WINDOWS_131 = "/aws/service/ami-windows-latest/Windows_Server-2022-English-Core-EKS_Optimized-1.31/image_id"
WINDOWS_AMI = "ami-0a1b2c3d4e5f60718"


def expect_windows_release(aws, image_name):
    aws.expect("ssm", "get_parameter", ssm_parameter(SSM_WINDOWS_131, WINDOWS_AMI), {"Name": SSM_WINDOWS_131})
    aws.expect("ec2", "describe_images", {"Images": [{"ImageId": WINDOWS_AMI, "Name": image_name}]},
               {"ImageIds": [WINDOWS_AMI]})


@pytest.mark.parametrize("release, action", [("1.31-2024.10.08", "start"), ("1.31-2024.11.12", "none")])
def test_issue29_item3_windows_kubernetes_version_of_the_group_moves_to_the_newest_release(aws, run, release, action):
    group = nodegroup(version="1.31", releaseVersion=release, amiType="WINDOWS_CORE_2022_x86_64")
    expect_reads(aws, group=group, release=None)
    # The SSM parameter names the newest AMI; its name holds the release.
    expect_windows_release(aws, "Windows_Server-2022-English-Core-EKS_Optimized-1.31-2024.11.12")
    expect_progress(aws)
    result = run(check=True, kubernetes_version="1.31")
    assert not result.get("failed"), result
    plan = result["nodegroup_update"]["plan"]
    assert (plan["action"], plan["expected_release_version"]) == (action, "1.31-2024.11.12")
    assert result["changed"] is (action == "start") and aws.update_calls == []
    aws.assert_all_used()


def test_a_windows_ami_whose_name_does_not_say_its_release_leaves_the_version_to_decide_and_says_so(aws, run):
    group = nodegroup(version="1.31", releaseVersion="1.31-2024.10.08", amiType="WINDOWS_CORE_2022_x86_64")
    expect_reads(aws, group=group, release=None)
    expect_windows_release(aws, "my-renamed-copy")
    expect_progress(aws)
    result = run(check=True, kubernetes_version="1.31")
    assert result["nodegroup_update"]["plan"]["action"] == "none", result
    assert "cannot be read from its name 'my-renamed-copy'" in str(result["warnings"])
    aws.assert_all_used()
