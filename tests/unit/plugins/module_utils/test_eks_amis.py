# -*- coding: utf-8 -*-
# Copyright: Contributors to the eksops.nodegroup project
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""EKS-optimized AMIs (SPEC U1, K6): the SSM parameter of each image family, and the version checks."""

from __future__ import annotations


import pytest
from botocore.exceptions import ClientError

from ansible_collections.eksops.nodegroup.plugins.module_utils.nodegroup import amis
from ansible_collections.eksops.nodegroup.plugins.module_utils.errors import INVALID_PARAMETER, UpgradeError


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
    assert amis.eks_ami_ssm_parameter(image_name, "1.30") == parameter


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
        amis.eks_ami_ssm_parameter(image_name, version)
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
    image_id, parameter = amis.resolve_eks_ami(FakeSsm({name: "ami-0130"}),
                                               "amazon-eks-node-al2023-x86_64-standard-1.29-v20240101", "1.30")
    assert (image_id, parameter) == ("ami-0130", name)


def test_unpublished_kubernetes_version_names_kubernetes_version():
    with pytest.raises(UpgradeError) as raised:
        amis.resolve_eks_ami(FakeSsm({}), "amazon-eks-node-al2023-x86_64-standard-1.29-v20240101", "1.99")
    err = raised.value
    assert err.details["parameter"] == "kubernetes_version"
    assert "1.99" in err.msg and err.details["ssm_parameter"] in err.msg
    assert "Amazon Linux 2 " not in err.msg, "the AL2 advice is for AL2 images only"


# Names from the sources nodegroup/amis.py cites: the amazon-eks-ami CHANGELOG (AL2/AL2023), the EKS user guide and
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
    assert amis.eks_ami_ssm_parameter(image_name, "1.32") == parameter


@pytest.mark.parametrize("image_name", [
    "bottlerocket-aws-k8s-1.30-arm64-v1.20.3-5d9ac849",        # Bottlerocket images never say arm64
    "bottlerocket-aws-k8s-1.30-gpu-x86_64-v1.20.3-5d9ac849",   # no such flavour
    "bottlerocket-aws-ecs-2-x86_64-v1.20.3-5d9ac849",          # an ECS variant: no Kubernetes version to follow
    "amazon-eks-node-al2023-x86_64-nvidia-560-v20241016",      # no Kubernetes version
])
def test_item10_unknown_image_families_are_refused_not_guessed(image_name):
    with pytest.raises(UpgradeError) as raised:
        amis.eks_ami_ssm_parameter(image_name, "1.30")
    assert raised.value.details["parameter"] == "kubernetes_version"
    assert "pass image_id" in raised.value.msg


def test_item10_bottlerocket_arm64_resolves_through_the_arm64_parameter():
    arm64 = "/aws/service/bottlerocket/aws-k8s-1.30/arm64/latest/image_id"
    ssm = FakeSsm({arm64: "ami-0a64", "/aws/service/bottlerocket/aws-k8s-1.30/x86_64/latest/image_id": "ami-0x86"})
    assert amis.resolve_eks_ami(ssm, "bottlerocket-aws-k8s-1.29-aarch64-v1.20.3-5d9ac849", "1.30") == ("ami-0a64", arm64)


@pytest.mark.parametrize("image_name, family", [
    ("amazon-eks-node-1.32-v20250116", "amazon-linux-2"),
    ("amazon-eks-arm64-node-1.32-v20250116", "amazon-linux-2-arm64"),
    ("amazon-eks-gpu-node-1.32-v20250116", "amazon-linux-2-gpu"),
])
@pytest.mark.parametrize("version", ["1.33", "1.34"])
def test_item10_no_al2_ami_from_1_33_points_to_al2023(image_name, family, version):
    with pytest.raises(UpgradeError) as raised:
        amis.resolve_eks_ami(FakeSsm({}), image_name, version)
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
        amis.resolve_eks_ami(FakeSsm({}), image_name, version)
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
        amis.eks_ami_ssm_parameter("amazon-eks-node-al2023-x86_64-standard-1.29-v20240101", version)
    err = raised.value
    assert (err.code, err.details["parameter"]) == (INVALID_PARAMETER, "kubernetes_version")
    assert "%r is older than 1.23" % version in err.msg
    assert 'kubernetes_version: "1.30", not 1.30' in err.msg
    assert ('did you mean "%s"' % meant in err.msg) if meant else ("did you mean" not in err.msg)


@pytest.mark.parametrize("version", [1.3, 1.2, 1, 130])
def test_item10_a_number_passed_directly_is_refused_asking_for_quotes(version):
    with pytest.raises(UpgradeError) as raised:
        amis.eks_ami_ssm_parameter("amazon-eks-node-al2023-x86_64-standard-1.29-v20240101", version)
    assert raised.value.details["parameter"] == "kubernetes_version"
    assert "got the number" in raised.value.msg and 'kubernetes_version: "1.30", not 1.30' in raised.value.msg


def test_item10_yaml_1_30_reaches_a_str_option_as_1_3_and_is_refused():
    """The whole path: YAML reads 1.30 as a float; Ansible's `type: str` conversion makes it "1.3"."""
    import yaml
    from ansible.module_utils.common.validation import check_type_str

    given = check_type_str(yaml.safe_load("kubernetes_version: 1.30")["kubernetes_version"])
    assert given == "1.3"
    with pytest.raises(UpgradeError) as raised:
        amis.eks_ami_ssm_parameter("amazon-eks-node-al2023-x86_64-standard-1.29-v20240101", given)
    assert raised.value.details["parameter"] == "kubernetes_version"
    assert 'did you mean "1.30"' in raised.value.msg
    quoted = yaml.safe_load('kubernetes_version: "1.30"')["kubernetes_version"]
    assert amis.eks_ami_ssm_parameter("amazon-eks-node-al2023-x86_64-standard-1.29-v20240101", check_type_str(quoted)) \
        == "/aws/service/eks/optimized-ami/1.30/amazon-linux-2023/x86_64/standard/recommended/image_id"


@pytest.mark.parametrize("version", ["1.23", "1.24", "1.30", "1.99", "1.100"])
def test_item10_versions_from_1_23_on_pass_the_check(version):
    assert amis.check_kubernetes_version(version) == (1, int(version.split(".")[1]))


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
    assert amis.ami_kubernetes_version(name) == version


NEW = "amazon-eks-node-al2023-x86_64-standard-1.30-v20240615"


OLD = "amazon-eks-node-al2023-x86_64-standard-1.29-v20240101"


def test_a_target_newer_than_the_control_plane_is_refused_K6():
    with pytest.raises(UpgradeError) as raised:
        amis.check_version_change("image_id", NEW, OLD, "1.29", allow_downgrade=False)
    assert raised.value.details["parameter"] == "image_id" and "control plane" in raised.value.msg
    amis.check_version_change("image_id", NEW, OLD, "1.30", allow_downgrade=False)


def test_a_downgrade_is_refused_unless_allowed():
    with pytest.raises(UpgradeError) as raised:
        amis.check_version_change("kubernetes_version", OLD, NEW, "1.30", allow_downgrade=False)
    assert raised.value.details["parameter"] == "kubernetes_version" and "allow_downgrade" in raised.value.msg
    amis.check_version_change("kubernetes_version", OLD, NEW, "1.30", allow_downgrade=True)


def test_custom_ami_names_are_not_judged():
    amis.check_version_change("image_id", "golden-2025", NEW, "1.20", allow_downgrade=False)
    amis.check_version_change("image_id", OLD, "golden-2025", "1.30", allow_downgrade=False)
