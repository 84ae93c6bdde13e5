"""Node group discovery, the EKS-optimized AMI lookup, and the pure decisions of launch_template_version
(SPEC U1) and nodegroup_info (U1, U2, U5, U7, S1-S4)."""

from __future__ import annotations

import datetime
import random

import pytest
from botocore.exceptions import ClientError
from hypothesis import given, strategies as st
from kubernetes.client import V1Node, V1NodeCondition, V1NodeSpec, V1NodeStatus, V1ObjectMeta
from moto import mock_aws

from ansible_collections.eksops.nodegroup.plugins.module_utils import nodegroup as ng
from ansible_collections.eksops.nodegroup.plugins.module_utils.errors import INVALID_PARAMETER, UpgradeError
from ansible_collections.eksops.nodegroup.plugins.module_utils.journal import Journal

from ..moto_nodegroup import (
    ASG_NAME,
    CLOUDFORMATION,
    CLUSTER,
    KIND_SETUPS,
    MANAGED,
    NODEGROUP,
    SELF_MANAGED,
    SELF_MANAGED_EKSCTL,
    TERRAFORM,
    TF_ASG_SUFFIX,
    MotoNodegroup,
    asg_tag_list,
    eksctl_tags,
    managed_tags,
    self_managed_tags,
)


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
    # Bottlerocket names the build architecture (aarch64); its SSM parameters say arm64 (issue 10, item 10).
    ("bottlerocket-aws-k8s-1.29-aarch64-v1.19.2-29cc92cc",
     "/aws/service/bottlerocket/aws-k8s-1.30/arm64/latest/image_id"),
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
    ("amazon-eks-node-1.29-v20240117", None),
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
    assert "Amazon Linux 2 " not in err.msg, "the AL2 advice is for AL2 images only"


# --- Issue 10, item 10: real AMI names and parameters, and a kubernetes_version given as a YAML number ------------
# Names from the sources nodegroup.py cites: the amazon-eks-ami CHANGELOG (AL2/AL2023), the EKS user guide and
# bottlerocket-os/bottlerocket (Bottlerocket: image names say aarch64, SSM parameters say arm64).

@pytest.mark.parametrize("image_name, parameter", [
    # AL2023 NVIDIA with the driver series in the name (releases v20240924 to v20241016) and without it (since).
    ("amazon-eks-node-al2023-x86_64-nvidia-560-1.31-v20241016",
     "/aws/service/eks/optimized-ami/1.32/amazon-linux-2023/x86_64/nvidia/recommended/image_id"),
    ("amazon-eks-node-al2023-x86_64-nvidia-560-1.29-v20240924",
     "/aws/service/eks/optimized-ami/1.32/amazon-linux-2023/x86_64/nvidia/recommended/image_id"),
    ("amazon-eks-node-al2023-x86_64-nvidia-1.31-v20241109",
     "/aws/service/eks/optimized-ami/1.32/amazon-linux-2023/x86_64/nvidia/recommended/image_id"),
    ("amazon-eks-node-al2023-arm64-nvidia-1.32-v20250519",
     "/aws/service/eks/optimized-ami/1.32/amazon-linux-2023/arm64/nvidia/recommended/image_id"),
    ("amazon-eks-node-al2023-x86_64-neuron-1.31-v20241109",
     "/aws/service/eks/optimized-ami/1.32/amazon-linux-2023/x86_64/neuron/recommended/image_id"),
    # Bottlerocket: every flavour on both architectures.
    ("bottlerocket-aws-k8s-1.30-aarch64-v1.20.3-5d9ac849",
     "/aws/service/bottlerocket/aws-k8s-1.32/arm64/latest/image_id"),
    ("bottlerocket-aws-k8s-1.30-x86_64-v1.20.3-5d9ac849",
     "/aws/service/bottlerocket/aws-k8s-1.32/x86_64/latest/image_id"),
    ("bottlerocket-aws-k8s-1.30-nvidia-aarch64-v1.20.4-b6163b2a",
     "/aws/service/bottlerocket/aws-k8s-1.32-nvidia/arm64/latest/image_id"),
    ("bottlerocket-aws-k8s-1.30-nvidia-x86_64-v1.20.4-b6163b2a",
     "/aws/service/bottlerocket/aws-k8s-1.32-nvidia/x86_64/latest/image_id"),
    ("bottlerocket-aws-k8s-1.31-fips-x86_64-v1.27.1-efd46c32",
     "/aws/service/bottlerocket/aws-k8s-1.32-fips/x86_64/latest/image_id"),
    ("bottlerocket-aws-k8s-1.31-fips-aarch64-v1.27.1-efd46c32",
     "/aws/service/bottlerocket/aws-k8s-1.32-fips/arm64/latest/image_id"),
    ("bottlerocket-aws-k8s-1.31-nvidia-fips-x86_64-v1.50.0-5043decc",
     "/aws/service/bottlerocket/aws-k8s-1.32-nvidia-fips/x86_64/latest/image_id"),
    ("bottlerocket-aws-k8s-1.31-nvidia-fips-aarch64-v1.50.0-5043decc",
     "/aws/service/bottlerocket/aws-k8s-1.32-nvidia-fips/arm64/latest/image_id"),
    # The AL2 families still map as before (up to 1.32, the last version EKS publishes AL2 AMIs for).
    ("amazon-eks-node-1.31-v20250116", "/aws/service/eks/optimized-ami/1.32/amazon-linux-2/recommended/image_id"),
    ("amazon-eks-arm64-node-1.31-v20250116",
     "/aws/service/eks/optimized-ami/1.32/amazon-linux-2-arm64/recommended/image_id"),
    ("amazon-eks-gpu-node-1.31-v20250116",
     "/aws/service/eks/optimized-ami/1.32/amazon-linux-2-gpu/recommended/image_id"),
])
def test_item10_real_ami_names_map_to_the_published_parameters(image_name, parameter):
    assert ng.eks_ami_ssm_parameter(image_name, "1.32") == parameter


@pytest.mark.parametrize("image_name", [
    "bottlerocket-aws-k8s-1.30-arm64-v1.20.3-5d9ac849",        # Bottlerocket images never say arm64
    "bottlerocket-aws-k8s-1.30-gpu-x86_64-v1.20.3-5d9ac849",   # no such flavour
    "bottlerocket-aws-ecs-2-x86_64-v1.20.3-5d9ac849",          # an ECS variant: no Kubernetes version to follow
    "amazon-eks-node-al2023-x86_64-nvidia-560-v20241016",      # no Kubernetes version
])
def test_item10_unknown_image_families_are_refused_not_guessed(image_name):
    with pytest.raises(UpgradeError) as raised:
        ng.eks_ami_ssm_parameter(image_name, "1.30")
    assert raised.value.details["parameter"] == "kubernetes_version"
    assert "pass image_id" in raised.value.msg


def test_item10_bottlerocket_arm64_resolves_through_the_arm64_parameter():
    arm64 = "/aws/service/bottlerocket/aws-k8s-1.30/arm64/latest/image_id"
    ssm = FakeSsm({arm64: "ami-0a64", "/aws/service/bottlerocket/aws-k8s-1.30/x86_64/latest/image_id": "ami-0x86"})
    assert ng.resolve_eks_ami(ssm, "bottlerocket-aws-k8s-1.29-aarch64-v1.20.3-5d9ac849", "1.30") == ("ami-0a64", arm64)


@pytest.mark.parametrize("image_name, family", [
    ("amazon-eks-node-1.32-v20250116", "amazon-linux-2"),
    ("amazon-eks-arm64-node-1.32-v20250116", "amazon-linux-2-arm64"),
    ("amazon-eks-gpu-node-1.32-v20250116", "amazon-linux-2-gpu"),
])
@pytest.mark.parametrize("version", ["1.33", "1.34"])
def test_item10_no_al2_ami_from_1_33_points_to_al2023(image_name, family, version):
    with pytest.raises(UpgradeError) as raised:
        ng.resolve_eks_ami(FakeSsm({}), image_name, version)
    err = raised.value
    parameter = "/aws/service/eks/optimized-ami/%s/%s/recommended/image_id" % (version, family)
    assert (err.code, err.details["parameter"], err.details["ssm_parameter"]) == (
        INVALID_PARAMETER, "kubernetes_version", parameter)
    assert err.msg.startswith("No EKS-optimized AMI is published for Kubernetes %s (kubernetes_version)" % version)
    assert parameter in err.msg and image_name in err.msg
    assert "EKS publishes no Amazon Linux 2 (AL2) AMIs from Kubernetes 1.33 on" in err.msg
    assert "Amazon Linux 2023" in err.msg and "nodeadm" in err.msg


@pytest.mark.parametrize("image_name, version", [
    ("amazon-eks-node-1.31-v20250116", "1.32"),                           # AL2 within its versions: no AL2 advice
    ("bottlerocket-aws-k8s-1.30-aarch64-v1.20.3-5d9ac849", "1.33"),       # not AL2: no AL2 advice
    ("amazon-eks-node-al2023-x86_64-standard-1.32-v20250116", "1.33"),
])
def test_item10_other_missing_parameters_keep_the_plain_message(image_name, version):
    with pytest.raises(UpgradeError) as raised:
        ng.resolve_eks_ami(FakeSsm({}), image_name, version)
    err = raised.value
    assert err.details["parameter"] == "kubernetes_version"
    assert err.msg.startswith("No EKS-optimized AMI is published for Kubernetes %s (kubernetes_version)" % version)
    assert err.details["ssm_parameter"] in err.msg
    assert "Amazon Linux 2 (AL2)" not in err.msg


@pytest.mark.parametrize("version, meant", [
    ("1.3", "1.30"), ("1.9", "1.90"),       # an unquoted YAML 1.30 / 1.90, as the str option receives it
    ("1.1", None), ("1.2", None),           # 1.10 / 1.20: too old even unmangled, so no guess
    ("1.22", None), ("1.0", None),          # older than any version of the extended-support era
])
def test_item10_versions_older_than_eks_are_refused_asking_for_quotes(version, meant):
    with pytest.raises(UpgradeError) as raised:
        ng.eks_ami_ssm_parameter("amazon-eks-node-al2023-x86_64-standard-1.29-v20240101", version)
    err = raised.value
    assert (err.code, err.details["parameter"]) == (INVALID_PARAMETER, "kubernetes_version")
    assert "%r is older than 1.23" % version in err.msg
    assert 'kubernetes_version: "1.30", not 1.30' in err.msg
    assert ('did you mean "%s"' % meant in err.msg) if meant else ("did you mean" not in err.msg)


@pytest.mark.parametrize("version", [1.3, 1.2, 1, 130])
def test_item10_a_number_passed_directly_is_refused_asking_for_quotes(version):
    with pytest.raises(UpgradeError) as raised:
        ng.eks_ami_ssm_parameter("amazon-eks-node-al2023-x86_64-standard-1.29-v20240101", version)
    assert raised.value.details["parameter"] == "kubernetes_version"
    assert "got the number" in raised.value.msg and 'kubernetes_version: "1.30", not 1.30' in raised.value.msg


def test_item10_yaml_1_30_reaches_a_str_option_as_1_3_and_is_refused():
    """The whole path: YAML reads 1.30 as a float; Ansible's `type: str` conversion makes it "1.3"."""
    import yaml
    from ansible.module_utils.common.validation import check_type_str

    given = check_type_str(yaml.safe_load("kubernetes_version: 1.30")["kubernetes_version"])
    assert given == "1.3"
    with pytest.raises(UpgradeError) as raised:
        ng.eks_ami_ssm_parameter("amazon-eks-node-al2023-x86_64-standard-1.29-v20240101", given)
    assert raised.value.details["parameter"] == "kubernetes_version"
    assert 'did you mean "1.30"' in raised.value.msg
    quoted = yaml.safe_load('kubernetes_version: "1.30"')["kubernetes_version"]
    assert ng.eks_ami_ssm_parameter("amazon-eks-node-al2023-x86_64-standard-1.29-v20240101", check_type_str(quoted)) \
        == "/aws/service/eks/optimized-ami/1.30/amazon-linux-2023/x86_64/standard/recommended/image_id"


@pytest.mark.parametrize("version", ["1.23", "1.24", "1.30", "1.99", "1.100"])
def test_item10_versions_from_1_23_on_pass_the_check(version):
    assert ng.check_kubernetes_version(version) == (1, int(version.split(".")[1]))


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
    """A node of a plain self-managed group: the kubelet's own labels only (SPEC K1)."""
    return V1Node(
        metadata=V1ObjectMeta(name=name, labels=dict({"kubernetes.io/hostname": name}, **(labels or {}))),
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
    launched = datetime.datetime(2026, 1, 2, 3, 4, 5, 678000, tzinfo=datetime.timezone.utc)
    ec2_instances = [
        {"InstanceId": "i-1", "ImageId": "ami-old", "LaunchTime": launched},
        {"InstanceId": "i-2", "ImageId": "ami-new"},
        {"InstanceId": "i-3", "ImageId": "ami-new", "Tags": [{"Key": "aws:ec2launchtemplate:version", "Value": "2"}]},
    ]
    nodes = [node("n1", "i-1", unschedulable=True), node("n2", "i-2", "us-west-2b", ready=False),
             node("stray", "i-9")]
    joined = {row["instance_id"]: row for row in ng.join_instances_nodes(asg_instances, ec2_instances, nodes)}
    assert joined["i-1"] == dict(instance_id="i-1", availability_zone="us-west-2a", lifecycle_state="InService",
                                 health_status="Healthy", launch_template_version=1, image_id="ami-old",
                                 launch_time="2026-01-02T03:04:05Z", node_name="n1", ready=True, unschedulable=True,
                                 labels={"kubernetes.io/hostname": "n1"})
    assert (joined["i-2"]["node_name"], joined["i-2"]["ready"], joined["i-2"]["launch_template_version"]) == (
        "n2", False, 2)
    assert joined["i-2"]["launch_time"] is None
    assert (joined["i-3"]["node_name"], joined["i-3"]["ready"], joined["i-3"]["launch_template_version"]) == (
        None, False, 2)
    assert list(joined) == ["i-1", "i-2", "i-3"]


def test_node_labels_never_say_what_an_instance_runs():
    """K2: the launch template version and the AMI come from AWS only; a node's labels (which only some kinds
    set, and anyone can edit) are not evidence, so an instance AWS says nothing about stays unknown (old)."""
    labelled = node("n1", "i-1", labels={"eks.amazonaws.com/sourceLaunchTemplateVersion": "3",
                                         "eks.amazonaws.com/nodegroup-image": "ami-lbl"})
    [row] = ng.join_instances_nodes([{"InstanceId": "i-1"}], {}, [labelled])
    assert (row["launch_template_version"], row["image_id"]) == (None, None)
    assert row["node_name"] == "n1"


# --- node-group discovery (SPEC K1, moto in-process) -------------------------------------------------------

@pytest.fixture(scope="module")
def world():
    """One moto node group for the module (building one takes about a second); tests restore what they change."""
    with mock_aws():
        yield MotoNodegroup(desired=5)


@pytest.fixture(params=KIND_SETUPS, ids=["-".join(filter(None, setup)) for setup in KIND_SETUPS])
def kind_world(request):
    """A node group of each kind, as its own tool makes it, with one instance. Its own mock_aws: the tests that
    use it come before any test of ``world`` (a mock_aws inside another shares the outer one's state)."""
    kind, convention = request.param
    with mock_aws():
        yield MotoNodegroup(desired=1, kind=kind, convention=convention or TERRAFORM)


def add_asg(world, name, tags, desired=0):
    world.autoscaling.create_auto_scaling_group(
        AutoScalingGroupName=name, MinSize=0, MaxSize=3, DesiredCapacity=desired,
        LaunchTemplate={"LaunchTemplateId": world.lt_id, "Version": "1"}, VPCZoneIdentifier=world.subnets[0],
        Tags=asg_tag_list(name, tags))


SELECTORS = {MANAGED: "eks.amazonaws.com/nodegroup=workers",
             SELF_MANAGED_EKSCTL: "alpha.eksctl.io/nodegroup-name=workers",
             SELF_MANAGED: None}


def test_find_nodegroup_finds_each_kind_and_says_which(kind_world):
    """K1 discovery: DescribeNodegroup, else the eksctl tags, else the cluster tag with a matching name."""
    group = ng.find_nodegroup(kind_world.autoscaling, kind_world.eks, CLUSTER, NODEGROUP)
    assert (group.kind, group.asg_name) == (kind_world.kind, kind_world.asg_name)
    assert (group.cluster_name, group.nodegroup_name) == (CLUSTER, NODEGROUP)
    assert group.node_selector == SELECTORS[kind_world.kind]
    assert len(group.asg["Instances"]) == 1
    if kind_world.kind == MANAGED:
        assert group.managed["nodegroupName"] == NODEGROUP and group.managed["clusterName"] == CLUSTER
    else:
        assert group.managed is None


def test_with_asg_name_the_kind_comes_from_its_tags(kind_world):
    group = ng.find_nodegroup(kind_world.autoscaling, kind_world.eks, CLUSTER, NODEGROUP, kind_world.asg_name)
    assert (group.kind, group.asg_name) == (kind_world.kind, kind_world.asg_name)
    assert (group.managed is not None) == (kind_world.kind == MANAGED)
    fresher = group.with_asg(dict(group.asg, DesiredCapacity=7))
    assert (fresher.kind, fresher.managed, fresher.node_selector, fresher.asg["DesiredCapacity"]) == (
        group.kind, group.managed, group.node_selector, 7)


def test_only_the_managed_kind_is_refused_for_writes(kind_world):
    """K3: a module that writes to the ASG or launch template refuses a group EKS owns, naming it."""
    group = ng.find_nodegroup(kind_world.autoscaling, kind_world.eks, CLUSTER, NODEGROUP)
    if kind_world.kind != MANAGED:
        group.refuse_if_managed("scale its Auto Scaling group")
        return
    with pytest.raises(UpgradeError) as raised:
        group.refuse_if_managed("scale its Auto Scaling group")
    err = raised.value
    assert (err.code, err.details["parameter"], err.details["kind"]) == ("InvalidParameter", "nodegroup_name", MANAGED)
    assert NODEGROUP in err.msg and kind_world.asg_name in err.msg and "eks_nodegroup_update" in err.msg


def test_neighbours_are_not_taken_for_the_node_group(world):
    """Groups of another node group whose name starts with ours, of another cluster, or of another eksctl node
    group are not candidates (K1): discovery still finds the one group, and only it."""
    neighbours = {
        "workers-gpu-" + TF_ASG_SUFFIX: self_managed_tags(TERRAFORM, nodegroup="workers-gpu"),
        "workers-20240615120000123400000042": self_managed_tags(TERRAFORM, cluster="prod"),
        "demo-batch-NodeGroup-1A2B3C": self_managed_tags(CLOUDFORMATION, nodegroup="batch"),
        "eksctl-demo-nodegroup-batch-NodeGroup-1A2B3C": eksctl_tags(nodegroup="batch"),
        "eksctl-staging-nodegroup-workers-NodeGroup-1A2B3C": eksctl_tags(cluster="staging"),
    }
    for name, tags in neighbours.items():
        add_asg(world, name, tags)
    try:
        group = ng.find_nodegroup(world.autoscaling, world.eks, CLUSTER, NODEGROUP)
        assert (group.kind, group.asg_name) == (SELF_MANAGED, ASG_NAME)
        assert ng.find_nodegroup(world.autoscaling, world.eks, CLUSTER, "workers-gpu").asg_name == \
            "workers-gpu-" + TF_ASG_SUFFIX
        assert ng.find_nodegroup(world.autoscaling, world.eks, "staging", NODEGROUP).kind == SELF_MANAGED_EKSCTL
    finally:
        for name in neighbours:
            world.autoscaling.delete_auto_scaling_group(AutoScalingGroupName=name, ForceDelete=True)


def test_a_group_found_by_its_terraform_name_alone(world):
    """An ASG made with name_prefix and no Name tag: its name is <node group>-<terraform suffix>, whose counter
    is hex (the eleventh name_prefix of a terraform run ends in "a")."""
    name = "spot-2024061512000012340000000a"
    add_asg(world, name, {"kubernetes.io/cluster/demo": "owned"})
    try:
        group = ng.find_nodegroup(world.autoscaling, world.eks, CLUSTER, "spot")
        assert (group.kind, group.asg_name) == (SELF_MANAGED, name)
    finally:
        world.autoscaling.delete_auto_scaling_group(AutoScalingGroupName=name, ForceDelete=True)


@pytest.mark.parametrize("tags, told", [
    (self_managed_tags(TERRAFORM, cluster="prod"), "prod"),
    (eksctl_tags(cluster="prod"), "prod"),
    (eksctl_tags(nodegroup="batch"), "batch"),
    (managed_tags(nodegroup="batch"), "batch"),
    (managed_tags(cluster="prod"), "prod"),
])
def test_asg_name_tagged_for_another_cluster_or_node_group_is_refused(world, tags, told):
    add_asg(world, "named", tags)
    try:
        with pytest.raises(UpgradeError) as raised:
            ng.find_nodegroup(world.autoscaling, world.eks, CLUSTER, NODEGROUP, "named")
    finally:
        world.autoscaling.delete_auto_scaling_group(AutoScalingGroupName="named", ForceDelete=True)
    err = raised.value
    assert (err.code, err.details["parameter"]) == ("InvalidParameter", "asg_name")
    assert "named" in err.msg and told in err.msg


def test_asg_name_of_a_group_tagged_only_for_the_cluster_is_taken_as_self_managed(world):
    """The user names the group: its cluster tag says it is this cluster's, nothing says it is another kind."""
    add_asg(world, "hand-made", {"team": "platform", "kubernetes.io/cluster/" + CLUSTER: "owned"})
    try:
        group = ng.find_nodegroup(world.autoscaling, world.eks, CLUSTER, NODEGROUP, "hand-made")
    finally:
        world.autoscaling.delete_auto_scaling_group(AutoScalingGroupName="hand-made", ForceDelete=True)
    assert (group.kind, group.asg_name, group.node_selector) == (SELF_MANAGED, "hand-made", None)


@pytest.mark.parametrize("tags", [
    {"team": "platform"},
    {"kubernetes.io/cluster/staging": "owned", "kubernetes.io/cluster/prod": "owned"},
])
def test_asg_name_of_a_group_not_tagged_for_the_cluster_is_refused(world, tags):
    """An untagged group may be another cluster's: its instances would all look like nodes that never joined,
    and be terminated with their pods (issue 9)."""
    add_asg(world, "hand-made", tags)
    try:
        with pytest.raises(UpgradeError) as raised:
            ng.find_nodegroup(world.autoscaling, world.eks, CLUSTER, NODEGROUP, "hand-made")
    finally:
        world.autoscaling.delete_auto_scaling_group(AutoScalingGroupName="hand-made", ForceDelete=True)
    assert raised.value.code == INVALID_PARAMETER and raised.value.details["parameter"] == "asg_name"
    assert "kubernetes.io/cluster/%s" % CLUSTER in raised.value.msg


def test_two_candidates_are_refused_naming_both(world):
    """K1: a CloudFormation group with the same node-group name in the same cluster; the module must not guess."""
    second = "demo-workers-NodeGroup-1A2B3C"
    add_asg(world, second, self_managed_tags(CLOUDFORMATION))
    try:
        with pytest.raises(UpgradeError) as raised:
            ng.find_nodegroup(world.autoscaling, world.eks, CLUSTER, NODEGROUP)
        # asg_name settles it
        assert ng.find_nodegroup(world.autoscaling, world.eks, CLUSTER, NODEGROUP, second).asg_name == second
    finally:
        world.autoscaling.delete_auto_scaling_group(AutoScalingGroupName=second, ForceDelete=True)
    err = raised.value
    assert (err.code, err.details["parameter"]) == ("InvalidParameter", "asg_name")
    assert ASG_NAME in err.msg and second in err.msg
    assert err.details["candidates"] == sorted([ASG_NAME, second])


def test_a_managed_and_a_self_managed_group_of_one_name_are_refused_naming_both(world):
    managed = world.eks.create_nodegroup(
        clusterName=CLUSTER, nodegroupName=NODEGROUP, nodeRole="arn:aws:iam::123456789012:role/eks-node",
        subnets=world.subnets)["nodegroup"]
    managed_asg = managed["resources"]["autoScalingGroups"][0]["name"]
    add_asg(world, managed_asg, managed_tags())
    try:
        with pytest.raises(UpgradeError) as raised:
            ng.find_nodegroup(world.autoscaling, world.eks, CLUSTER, NODEGROUP)
    finally:
        world.autoscaling.delete_auto_scaling_group(AutoScalingGroupName=managed_asg, ForceDelete=True)
        world.eks.delete_nodegroup(clusterName=CLUSTER, nodegroupName=NODEGROUP)
    assert raised.value.details["parameter"] == "asg_name"
    assert "%s (managed)" % managed_asg in raised.value.msg and "%s (self_managed)" % ASG_NAME in raised.value.msg


@pytest.mark.parametrize("args, parameter, named", [
    ((CLUSTER, "nope", None), "nodegroup_name", "nope"),
    (("prod", NODEGROUP, None), "cluster_name", "prod"),        # no such cluster: its name is what is wrong
    ((CLUSTER, NODEGROUP, "no-such-asg"), "asg_name", "no-such-asg"),
])
def test_nothing_found_names_the_parameter(world, args, parameter, named):
    with pytest.raises(UpgradeError) as raised:
        ng.find_nodegroup(world.autoscaling, world.eks, *args)
    assert (raised.value.code, raised.value.details["parameter"]) == ("ResourceNotFound", parameter)
    assert named in raised.value.msg


def test_an_existing_cluster_without_the_node_group_names_nodegroup_name(world):
    """The cluster exists (so it is the node group that is not there) and the message says where it looked."""
    world.eks.create_cluster(name="prod", roleArn="arn:aws:iam::123456789012:role/eks",
                             resourcesVpcConfig={"subnetIds": world.subnets})
    try:
        with pytest.raises(UpgradeError) as raised:
            ng.find_nodegroup(world.autoscaling, world.eks, "prod", NODEGROUP)
    finally:
        world.eks.delete_cluster(name="prod")
    err = raised.value
    assert (err.code, err.details["parameter"]) == ("ResourceNotFound", "nodegroup_name")
    assert NODEGROUP in err.msg and "prod" in err.msg
    assert "kubernetes.io/cluster/prod" in err.msg and "alpha.eksctl.io/nodegroup-name=workers" in err.msg


class DeniedEks:
    def describe_nodegroup(self, clusterName, nodegroupName):
        raise ClientError({"Error": {"Code": "AccessDeniedException", "Message": "not authorized to perform "
                                     "eks:DescribeNodegroup"}}, "DescribeNodegroup")


def test_access_denied_on_describe_nodegroup_is_not_taken_for_self_managed(world):
    """Without eks:DescribeNodegroup a managed group would be taken for a self-managed one and written to (K3):
    the error stops discovery instead."""
    with pytest.raises(UpgradeError) as raised:
        ng.find_nodegroup(world.autoscaling, DeniedEks(), CLUSTER, NODEGROUP)
    assert raised.value.code == "AccessDenied"
    assert "DescribeNodegroup" in raised.value.msg


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
    assert ng.resolve_launch_template_id(world.ec2, {"id": None, "name": world.lt_name}) == world.lt_id


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
    assert plan["max_unavailable"] == 3
    assert [len(b) for b in plan["batches"]] == [3, 3, 3, 1]


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


# --- Issue 10 items 12 and 19: the new nodes' Kubernetes version against the control plane and the old nodes ---

@pytest.mark.parametrize("name, version", [
    ("amazon-eks-node-al2023-x86_64-standard-1.30-v20240615", (1, 30)),
    ("amazon-eks-node-al2023-x86_64-nvidia-560-1.31-v20241016", (1, 31)),
    ("amazon-eks-gpu-node-1.29-v20240101", (1, 29)),
    ("amazon-eks-node-1.32-v20250101", (1, 32)),
    ("bottlerocket-aws-k8s-1.30-aarch64-v1.20.3-5d9ac849", (1, 30)),
    ("my-golden-image-2024-06", None),
    (None, None),
])
def test_ami_kubernetes_version_reads_eks_optimized_names(name, version):
    assert ng.ami_kubernetes_version(name) == version


NEW = "amazon-eks-node-al2023-x86_64-standard-1.30-v20240615"
OLD = "amazon-eks-node-al2023-x86_64-standard-1.29-v20240101"


def test_a_target_newer_than_the_control_plane_is_refused_K6():
    with pytest.raises(UpgradeError) as raised:
        ng.check_version_change("image_id", NEW, OLD, "1.29", allow_downgrade=False)
    assert raised.value.details["parameter"] == "image_id" and "control plane" in raised.value.msg
    ng.check_version_change("image_id", NEW, OLD, "1.30", allow_downgrade=False)


def test_a_downgrade_is_refused_unless_allowed():
    with pytest.raises(UpgradeError) as raised:
        ng.check_version_change("kubernetes_version", OLD, NEW, "1.30", allow_downgrade=False)
    assert raised.value.details["parameter"] == "kubernetes_version" and "allow_downgrade" in raised.value.msg
    ng.check_version_change("kubernetes_version", OLD, NEW, "1.30", allow_downgrade=True)


def test_custom_ami_names_are_not_judged():
    ng.check_version_change("image_id", "golden-2025", NEW, "1.20", allow_downgrade=False)
    ng.check_version_change("image_id", OLD, "golden-2025", "1.30", allow_downgrade=False)
