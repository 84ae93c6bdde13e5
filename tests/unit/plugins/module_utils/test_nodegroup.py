"""Node group discovery, the EKS-optimized AMI lookup, and the pure decisions of launch_template_version
(SPEC U1) and nodegroup_info (U1, U2, U5, U7, S1-S4)."""

from __future__ import annotations

import random

import pytest
from botocore.exceptions import ClientError
from hypothesis import given, strategies as st
from kubernetes.client import V1Node, V1NodeCondition, V1NodeSpec, V1NodeStatus, V1ObjectMeta
from moto import mock_aws

from ansible_collections.eksops.nodegroup.plugins.module_utils import nodegroup as ng
from ansible_collections.eksops.nodegroup.plugins.module_utils.errors import UpgradeError
from ansible_collections.eksops.nodegroup.plugins.module_utils.journal import Journal

from ..moto_nodegroup import ASG_NAME, CLUSTER, NODEGROUP, MotoNodegroup


# --- EKS-optimized AMI family (SPEC U1: kubernetes_version) ----------------------------------------------

@pytest.mark.parametrize("image_name, parameter", [
    ("amazon-eks-node-al2023-x86_64-standard-1.29-v20240101",
     "/aws/service/eks/optimized-ami/1.30/amazon-linux-2023/x86_64/standard/recommended/image_id"),
    ("amazon-eks-node-al2023-arm64-standard-1.29-v20240101",
     "/aws/service/eks/optimized-ami/1.30/amazon-linux-2023/arm64/standard/recommended/image_id"),
    ("amazon-eks-node-al2023-x86_64-nvidia-1.29-v20240101",
     "/aws/service/eks/optimized-ami/1.30/amazon-linux-2023/x86_64/nvidia/recommended/image_id"),
    ("amazon-eks-node-al2023-x86_64-neuron-1.29-v20240101",
     "/aws/service/eks/optimized-ami/1.30/amazon-linux-2023/x86_64/neuron/recommended/image_id"),
    ("amazon-eks-node-1.29-v20240117",
     "/aws/service/eks/optimized-ami/1.30/amazon-linux-2/recommended/image_id"),
    ("amazon-eks-arm64-node-1.29-v20240117",
     "/aws/service/eks/optimized-ami/1.30/amazon-linux-2-arm64/recommended/image_id"),
    ("amazon-eks-gpu-node-1.29-v20240117",
     "/aws/service/eks/optimized-ami/1.30/amazon-linux-2-gpu/recommended/image_id"),
    ("bottlerocket-aws-k8s-1.29-x86_64-v1.19.2-29cc92cc",
     "/aws/service/bottlerocket/aws-k8s-1.30/x86_64/latest/image_id"),
    ("bottlerocket-aws-k8s-1.29-aarch64-v1.19.2-29cc92cc",
     "/aws/service/bottlerocket/aws-k8s-1.30/aarch64/latest/image_id"),
    ("bottlerocket-aws-k8s-1.29-nvidia-x86_64-v1.19.2-29cc92cc",
     "/aws/service/bottlerocket/aws-k8s-1.30-nvidia/x86_64/latest/image_id"),
])
def test_ssm_parameter_follows_the_current_image_family(image_name, parameter):
    assert ng.eks_ami_ssm_parameter(image_name, "1.30") == parameter


@pytest.mark.parametrize("image_name, version", [
    ("my-golden-image-2024", "1.30"),
    (None, "1.30"),
    ("Windows_Server-2022-English-Core-EKS_Optimized-1.29-2024.01.01", "1.30"),
    ("amazon-eks-node-1.29-v20240117", "1.30.1"),
    ("amazon-eks-node-1.29-v20240117", "v1.30"),
    ("amazon-eks-node-1.29-v20240117", ""),
])
def test_unknown_family_or_bad_version_names_kubernetes_version(image_name, version):
    with pytest.raises(UpgradeError) as raised:
        ng.eks_ami_ssm_parameter(image_name, version)
    assert raised.value.code == "InvalidParameter"
    assert raised.value.details["parameter"] == "kubernetes_version"


class FakeSsm:
    def __init__(self, parameters):
        self.parameters = parameters

    def get_parameter(self, Name):
        if Name not in self.parameters:
            raise ClientError({"Error": {"Code": "ParameterNotFound", "Message": "Parameter %s not found." % Name}},
                              "GetParameter")
        return {"Parameter": {"Name": Name, "Value": self.parameters[Name] + "\n"}}


def test_resolve_eks_ami_reads_the_recommended_parameter():
    name = "/aws/service/eks/optimized-ami/1.30/amazon-linux-2023/x86_64/standard/recommended/image_id"
    image_id, parameter = ng.resolve_eks_ami(FakeSsm({name: "ami-0130"}),
                                             "amazon-eks-node-al2023-x86_64-standard-1.29-v20240101", "1.30")
    assert (image_id, parameter) == ("ami-0130", name)


def test_unpublished_kubernetes_version_names_kubernetes_version():
    with pytest.raises(UpgradeError) as raised:
        ng.resolve_eks_ami(FakeSsm({}), "amazon-eks-node-al2023-x86_64-standard-1.29-v20240101", "1.99")
    err = raised.value
    assert err.details["parameter"] == "kubernetes_version"
    assert "1.99" in err.msg and err.details["ssm_parameter"] in err.msg


# --- plan_launch_template_version (SPEC U1, idempotence) --------------------------------------------------

DATA = {"ImageId": "ami-old", "InstanceType": "m5.large", "UserData": "x"}


def lt_version(number, **data):
    return {"VersionNumber": number, "LaunchTemplateData": dict(DATA, **data)}


def test_new_image_creates_a_version_from_the_current_one():
    plan = ng.plan_launch_template_version("1", lt_version(1), lt_version(1), "ami-new")
    assert plan == dict(source_version=1, target_version=2, create=True, pin=True, image_id="ami-new",
                        previous_image_id="ami-old")


def test_source_is_the_asg_version_not_latest():
    plan = ng.plan_launch_template_version("2", lt_version(2), lt_version(5, InstanceType="m6i.large"), "ami-new")
    assert (plan["source_version"], plan["target_version"], plan["create"]) == (2, 6, True)


def test_asg_already_on_the_target_changes_nothing():
    plan = ng.plan_launch_template_version("2", lt_version(2, ImageId="ami-new"), lt_version(2, ImageId="ami-new"),
                                           "ami-new")
    assert (plan["create"], plan["pin"], plan["target_version"]) == (False, False, 2)


def test_asg_on_latest_alias_is_pinned_to_the_number():
    plan = ng.plan_launch_template_version("$Latest", lt_version(4, ImageId="ami-new"),
                                           lt_version(4, ImageId="ami-new"), "ami-new")
    assert (plan["create"], plan["pin"], plan["target_version"]) == (False, True, 4)


def test_latest_already_holding_the_new_image_is_reused():
    """A rerun after a crash between create and pin must not create a second version."""
    plan = ng.plan_launch_template_version("1", lt_version(1), lt_version(2, ImageId="ami-new"), "ami-new")
    assert (plan["create"], plan["pin"], plan["target_version"]) == (False, True, 2)


def test_latest_with_other_changes_is_not_reused():
    plan = ng.plan_launch_template_version("1", lt_version(1), lt_version(2, ImageId="ami-new", UserData="y"),
                                           "ami-new")
    assert (plan["create"], plan["target_version"]) == (True, 3)


def test_named_version():
    named = lt_version(7, ImageId="ami-seven")
    plan = ng.plan_launch_template_version("3", lt_version(3), lt_version(9), named=named)
    assert (plan["create"], plan["pin"], plan["target_version"], plan["image_id"]) == (False, True, 7, "ami-seven")
    assert ng.plan_launch_template_version("7", named, lt_version(9), named=named)["pin"] is False


def test_plan_needs_a_target():
    with pytest.raises(ValueError):
        ng.plan_launch_template_version("1", lt_version(1), lt_version(1))


def test_journal_conflict():
    journal = Journal(phase="upgrade", launch_template_id="lt-1", target_launch_template_version="2")
    assert not ng.journal_conflict(None, "lt-1", 2)
    assert not ng.journal_conflict(journal, "lt-1", 2)
    assert ng.journal_conflict(journal, "lt-1", 3)
    assert ng.journal_conflict(journal, "lt-2", 2)


# --- instances joined with nodes ------------------------------------------------------------------------

def node(name, instance_id, az="us-west-2a", ready=True, unschedulable=None, labels=None):
    return V1Node(
        metadata=V1ObjectMeta(name=name, labels=dict({"eks.amazonaws.com/nodegroup": NODEGROUP}, **(labels or {}))),
        spec=V1NodeSpec(provider_id="aws:///%s/%s" % (az, instance_id) if instance_id else None,
                        unschedulable=unschedulable),
        status=V1NodeStatus(conditions=[V1NodeCondition(type="Ready", status="True" if ready else "False")]))


@pytest.mark.parametrize("provider_id, instance_id", [
    ("aws:///us-west-2a/i-0123456789abcdef0", "i-0123456789abcdef0"),
    ("aws:///us-west-2a/i-0123/", "i-0123"),
    ("kind://docker/kind/kind-worker", None),
    ("aws:///us-west-2a/fargate-ip-10-0-0-1", None),
    (None, None),
])
def test_instance_id_of(provider_id, instance_id):
    assert ng.instance_id_of(V1Node(metadata=V1ObjectMeta(name="n"), spec=V1NodeSpec(provider_id=provider_id))) \
        == instance_id
    assert ng.instance_id_of({"spec": {"providerID": provider_id}}) == instance_id


def test_join_instances_nodes():
    asg_instances = [
        {"InstanceId": "i-1", "AvailabilityZone": "us-west-2a", "LifecycleState": "InService",
         "HealthStatus": "Healthy", "LaunchTemplate": {"Version": "1"}},
        {"InstanceId": "i-2", "AvailabilityZone": "us-west-2b", "LifecycleState": "InService",
         "HealthStatus": "Healthy", "LaunchTemplate": {"Version": "2"}},
        {"InstanceId": "i-3", "AvailabilityZone": "us-west-2c", "LifecycleState": "Pending"},
    ]
    ec2_instances = [
        {"InstanceId": "i-1", "ImageId": "ami-old"},
        {"InstanceId": "i-2", "ImageId": "ami-new"},
        {"InstanceId": "i-3", "ImageId": "ami-new", "Tags": [{"Key": "aws:ec2launchtemplate:version", "Value": "2"}]},
    ]
    nodes = [node("n1", "i-1", unschedulable=True), node("n2", "i-2", "us-west-2b", ready=False),
             node("stray", "i-9")]
    joined = {row["instance_id"]: row for row in ng.join_instances_nodes(asg_instances, ec2_instances, nodes)}
    assert joined["i-1"] == dict(instance_id="i-1", availability_zone="us-west-2a", lifecycle_state="InService",
                                 health_status="Healthy", launch_template_version=1, image_id="ami-old",
                                 node_name="n1", ready=True, unschedulable=True,
                                 labels={"eks.amazonaws.com/nodegroup": NODEGROUP})
    assert (joined["i-2"]["node_name"], joined["i-2"]["ready"], joined["i-2"]["launch_template_version"]) == (
        "n2", False, 2)
    assert (joined["i-3"]["node_name"], joined["i-3"]["ready"], joined["i-3"]["launch_template_version"]) == (
        None, False, 2)
    assert list(joined) == ["i-1", "i-2", "i-3"]


def test_node_labels_fill_in_what_aws_does_not_say():
    labelled = node("n1", "i-1", labels={"eks.amazonaws.com/sourceLaunchTemplateVersion": "3",
                                         "eks.amazonaws.com/nodegroup-image": "ami-lbl"})
    [row] = ng.join_instances_nodes([{"InstanceId": "i-1"}], {}, [labelled])
    assert (row["launch_template_version"], row["image_id"]) == (3, "ami-lbl")


# --- ASG discovery (moto in-process) --------------------------------------------------------------------

@pytest.fixture(scope="module")
def world():
    """One moto node group for the module (building one takes about a second); tests restore what they change."""
    with mock_aws():
        yield MotoNodegroup(desired=5)


def test_find_asg_by_tags_and_by_name(world):
    assert ng.find_asg(world.autoscaling, CLUSTER, NODEGROUP)["AutoScalingGroupName"] == ASG_NAME
    assert ng.find_asg(world.autoscaling, CLUSTER, NODEGROUP, ASG_NAME)["AutoScalingGroupName"] == ASG_NAME


@pytest.mark.parametrize("args, parameter", [
    ((CLUSTER, "nope", None), "nodegroup_name"),
    (("other-cluster", NODEGROUP, None), "nodegroup_name"),
    ((CLUSTER, NODEGROUP, "no-such-asg"), "asg_name"),
    (("other-cluster", NODEGROUP, ASG_NAME), "asg_name"),
])
def test_find_asg_errors_name_the_parameter(world, args, parameter):
    with pytest.raises(UpgradeError) as raised:
        ng.find_asg(world.autoscaling, *args)
    assert raised.value.details["parameter"] == parameter
    assert (args[2] or args[1]) in raised.value.msg


def test_find_asg_refuses_to_guess_between_several_groups(world):
    world.autoscaling.create_auto_scaling_group(
        AutoScalingGroupName="second", MinSize=0, MaxSize=1, DesiredCapacity=0,
        LaunchTemplate={"LaunchTemplateId": world.lt_id, "Version": "1"}, VPCZoneIdentifier=world.subnets[0],
        Tags=[{"ResourceId": "second", "ResourceType": "auto-scaling-group", "Key": k, "Value": v,
               "PropagateAtLaunch": False} for k, v in (("eks:cluster-name", CLUSTER),
                                                        ("eks:nodegroup-name", NODEGROUP))])
    try:
        with pytest.raises(UpgradeError) as raised:
            ng.find_asg(world.autoscaling, CLUSTER, NODEGROUP)
    finally:
        world.autoscaling.delete_auto_scaling_group(AutoScalingGroupName="second", ForceDelete=True)
    assert raised.value.details["parameter"] == "asg_name"
    assert "second" in raised.value.msg and ASG_NAME in raised.value.msg


class FakeEks:
    def __init__(self, asg_name, cluster_exists=True):
        self.asg_name = asg_name
        self.cluster_exists = cluster_exists

    def describe_cluster(self, name):
        if not self.cluster_exists:
            raise ClientError({"Error": {"Code": "ResourceNotFoundException", "Message": "No cluster found for name: "
                               + name}}, "DescribeCluster")
        return {"cluster": {"name": name, "endpoint": "https://k", "status": "ACTIVE"}}

    def describe_nodegroup(self, clusterName, nodegroupName):
        if self.asg_name is None:
            raise ClientError({"Error": {"Code": "ResourceNotFoundException", "Message": "no"}}, "DescribeNodegroup")
        return {"nodegroup": {"resources": {"autoScalingGroups": [{"name": self.asg_name}]}}}


def test_find_asg_of_a_managed_nodegroup_without_tags(world):
    found = ng.find_asg(world.autoscaling, CLUSTER, "managed", eks=FakeEks(ASG_NAME))
    assert found["AutoScalingGroupName"] == ASG_NAME
    with pytest.raises(UpgradeError) as raised:
        ng.find_asg(world.autoscaling, CLUSTER, "managed", eks=FakeEks(None))
    assert raised.value.details["parameter"] == "nodegroup_name"


def test_find_asg_says_when_the_cluster_is_what_does_not_exist(world):
    with pytest.raises(UpgradeError) as raised:
        ng.find_asg(world.autoscaling, "nope", NODEGROUP, eks=FakeEks(None, cluster_exists=False))
    assert raised.value.details["parameter"] == "cluster_name"
    assert "nope" in raised.value.msg


def test_asg_launch_template_spec():
    assert ng.asg_launch_template({"LaunchTemplate": {"LaunchTemplateId": "lt-1", "Version": "$Latest"}}) == (
        "lt-1", "$Latest")
    mixed = {"MixedInstancesPolicy": {"LaunchTemplate": {"LaunchTemplateSpecification": {
        "LaunchTemplateId": "lt-2", "Version": "4"}}}}
    assert ng.asg_launch_template_spec(mixed) == dict(id="lt-2", name=None, version="4", mixed=True)
    with pytest.raises(UpgradeError) as raised:
        ng.asg_launch_template({"AutoScalingGroupName": "lc", "LaunchConfigurationName": "old"})
    assert raised.value.details["parameter"] == "asg_name"


def test_launch_template_and_image_lookups_name_the_parameter(world):
    assert ng.describe_lt_version(world.ec2, world.lt_id, 1)["LaunchTemplateData"]["ImageId"] == world.old_ami
    with pytest.raises(UpgradeError) as raised:
        ng.describe_lt_version(world.ec2, world.lt_id, 42, parameter="version")
    assert (raised.value.code, raised.value.details["parameter"]) == ("ResourceNotFound", "version")
    assert "42" in raised.value.msg
    assert ng.describe_image(world.ec2, world.new_ami)["ImageId"] == world.new_ami
    with pytest.raises(UpgradeError) as raised:
        ng.describe_image(world.ec2, "ami-00000000000000000")
    assert (raised.value.code, raised.value.details["parameter"]) == ("ResourceNotFound", "image_id")
    assert ng.resolve_launch_template_id(world.ec2, {"id": None, "name": "workers"}) == world.lt_id


def test_target_lt_version_is_the_named_one_else_the_asgs(world):
    """U1: the version new nodes run; a missing named version names its option, a missing ASG one asg_name."""
    assert ng.target_lt_version(world.ec2, world.lt_id, "1") == (1, world.old_ami)
    assert ng.target_lt_version(world.ec2, world.lt_id, "99", named=1, parameter="target") == (1, world.old_ami)
    for named, parameter in ((99, "target"), (None, "asg_name")):
        with pytest.raises(UpgradeError) as raised:
            ng.target_lt_version(world.ec2, world.lt_id, "99", named=named, parameter="target")
        assert (raised.value.code, raised.value.details["parameter"]) == ("ResourceNotFound", parameter)


def test_pin_asg_launch_template(world):
    version = world.add_version(ImageId=world.new_ami)
    try:
        ng.pin_asg_launch_template(world.autoscaling, world.asg(), world.lt_id, version)
        assert world.asg()["LaunchTemplate"]["Version"] == str(version)
    finally:
        ng.pin_asg_launch_template(world.autoscaling, world.asg(), world.lt_id, 1)


def test_describe_instances_in_chunks(world, monkeypatch):
    ids = [i["InstanceId"] for i in world.asg()["Instances"]]
    calls = []
    real = world.ec2.get_paginator

    def counting_paginator(name):
        calls.append(name)
        return real(name)

    monkeypatch.setattr(world.ec2, "get_paginator", counting_paginator)
    monkeypatch.setattr(ng, "DESCRIBE_INSTANCES_CHUNK", 2)
    found = ng.describe_instances(world.ec2, ids + ids[:1])
    assert sorted(found) == sorted(ids)
    assert all(found[i]["ImageId"] == world.old_ami for i in ids)
    assert len(calls) == 3


# --- upgrade plan (nodegroup_info) -----------------------------------------------------------------------

def instances(count, cordoned=()):
    return [dict(instance_id="i-%03d" % i, unschedulable=i in cordoned) for i in range(count)]


def test_rolling_plan_surges_by_twice_the_azs():
    """U2 seed example: 5 AZs and max_unavailable 1 -> 10 new nodes; 20 -> 20."""
    plan = ng.upgrade_plan(instances(6), node_count=6, az_count=5, seed=1)
    assert (plan["strategy"], plan["surge"], plan["max_unavailable"], plan["batch_size"]) == ("rolling", 10, 1, 1)
    assert ng.upgrade_plan(instances(30), 30, 5, max_unavailable=20, seed=1)["surge"] == 20
    assert plan["steps"] is None and plan["seed"] == 1


def test_percentage_of_node_count():
    plan = ng.upgrade_plan(instances(10), node_count=10, az_count=3, max_unavailable_percentage=25, seed=1)
    assert plan["max_unavailable"] == 2
    assert [len(b) for b in plan["batches"]] == [2, 2, 2, 2, 2]


def test_minimal_strategy_does_not_pre_scale():
    """U7."""
    plan = ng.upgrade_plan(instances(4), 4, 3, update_strategy="minimal", max_unavailable=2, seed=1)
    assert (plan["strategy"], plan["surge"], plan["batch_size"]) == ("minimal", 0, 2)


def test_surge_plan_replaces_surge_plus_unavailable_at_once():
    """S4 seed example: N=5, max_surge=2, max_unavailable=1: up to 3 old nodes replaced at once."""
    plan = ng.upgrade_plan(instances(5), 5, 3, max_surge=2, max_unavailable=1, seed=1)
    assert (plan["strategy"], plan["surge"], plan["batch_size"]) == ("surge", 2, 3)
    assert [len(b) for b in plan["batches"]] == [3, 2]
    assert plan["steps"][0]["desired_after_launch"] == 7


def test_surge_defaults_max_unavailable_to_zero():
    """S2: max_surge=1, max_unavailable=0."""
    plan = ng.upgrade_plan(instances(3), 3, 3, max_surge=1, seed=1)
    assert (plan["max_unavailable"], plan["batch_size"]) == (0, 1)


@pytest.mark.parametrize("kwargs, parameter", [
    (dict(max_surge=1, update_strategy="minimal"), "max_surge"),
    (dict(max_surge=0, max_unavailable=0), "max_surge"),
    (dict(max_surge=15, max_unavailable=10), "max_surge"),
    (dict(max_unavailable=0), "max_unavailable"),
    (dict(max_unavailable=101), "max_unavailable"),
    (dict(max_unavailable_percentage=0), "max_unavailable_percentage"),
])
def test_bad_parallelism_names_the_parameter(kwargs, parameter):
    with pytest.raises(UpgradeError) as raised:
        ng.upgrade_plan(instances(4), 4, 3, seed=1, **kwargs)
    assert raised.value.details["parameter"] == parameter


def test_batches_are_reproducible_with_a_seed_and_random_without():
    old = instances(20)
    first = ng.upgrade_plan(old, 20, 3, max_unavailable=3, seed=7)["batches"]
    assert ng.upgrade_plan(old, 20, 3, max_unavailable=3, seed=7)["batches"] == first
    assert ng.upgrade_plan(old, 20, 3, max_unavailable=3, seed=8)["batches"] != first
    drawn = ng.upgrade_plan(old, 20, 3, max_unavailable=3)
    assert ng.upgrade_plan(old, 20, 3, max_unavailable=3, seed=drawn["seed"])["batches"] == drawn["batches"]


def test_cordoned_nodes_come_first():
    """A rerun after a crash mid-batch finishes the nodes it already cordoned."""
    plan = ng.upgrade_plan(instances(6, cordoned=(4, 5)), 6, 3, max_unavailable=2, seed=3)
    assert sorted(plan["batches"][0]) == ["i-004", "i-005"]


@given(count=st.integers(0, 300), size=st.integers(1, 100), seed=st.integers(0, 2 ** 31))
def test_batches_cover_every_old_instance_once(count, size, seed):
    """U5: every old instance is replaced exactly once, at most max_unavailable at a time."""
    batches = ng.random_batches(instances(count), size, random.Random(seed))
    flat = [i for batch in batches for i in batch]
    assert sorted(flat) == ["i-%03d" % i for i in range(count)]
    assert all(1 <= len(batch) <= size for batch in batches)
    assert len(batches) == -(-count // size)
