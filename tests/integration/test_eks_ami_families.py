# -*- coding: utf-8 -*-
# Copyright: Contributors to the eksops.nodegroup project
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""kubernetes_version on real AMI families, end to end (issue 10, item 10; SPEC U1): launch_template_version in
check mode reads the SSM public parameter the sandbox publishes the way AWS does (eks_sandbox/aws/seed.py
`recommended_parameter_name`), for the family of the group's current image:

- Bottlerocket arm64: the image name says aarch64, the parameter says arm64;
- AL2023 NVIDIA named with its driver series (amazon-eks-node-al2023-x86_64-nvidia-560-1.30-v20241016, as the
  amazon-eks-ami releases v20240924 to v20241016 named them) follows .../amazon-linux-2023/x86_64/nvidia/...;
- AL2 to 1.33: EKS publishes no AL2 AMI from 1.33 on; the refusal says so and points to AL2023;
- kubernetes_version given as a number (YAML 1.30 is 1.3) is refused, asking for quotes.

Every case changes nothing: no mutating AWS call, no Kubernetes write.
"""

from __future__ import annotations

import pytest
import yaml

from nodegroup_state import call_counts, calls_between, image_id_by_name, mutating_calls
from sandbox_helpers import run_module, running_sandbox

CLUSTER = "amis"
# Names shaped like the published ones (amazon-eks-ami CHANGELOG; Bottlerocket: bottlerocket-aws-k8s-<k8s>-<arch>-
# v<version>-<commit>).
BR_ARM_130 = "bottlerocket-aws-k8s-1.30-aarch64-v1.20.3-5d9ac849"
BR_ARM_131 = "bottlerocket-aws-k8s-1.31-aarch64-v1.26.2-360b7a38"
BR_X86_131 = "bottlerocket-aws-k8s-1.31-x86_64-v1.26.2-360b7a38"
NVIDIA_560_130 = "amazon-eks-node-al2023-x86_64-nvidia-560-1.30-v20241016"
NVIDIA_131 = "amazon-eks-node-al2023-x86_64-nvidia-1.31-v20241109"
AL2_132 = "amazon-eks-node-1.32-v20250116"
AL2023_133 = "amazon-eks-node-al2023-x86_64-standard-1.33-v20250519"
ONE_NODE = {"kind": "self_managed", "min_size": 0, "max_size": 2, "desired_capacity": 1}
AMI_SCENARIO = {
    "name": CLUSTER,
    "cluster": {"name": CLUSTER, "kubernetes_version": "1.33"},
    "availability_zones": ["us-west-2a", "us-west-2b"],
    "amis": [
        {"name": BR_ARM_130, "kubernetes_version": "1.30", "family": "bottlerocket/arm64"},
        {"name": BR_ARM_131, "kubernetes_version": "1.31", "family": "bottlerocket/arm64"},
        # The x86_64 image of the same version is published too: the arm64 group must not get it.
        {"name": BR_X86_131, "kubernetes_version": "1.31", "family": "bottlerocket/x86_64"},
        {"name": NVIDIA_560_130, "kubernetes_version": "1.30", "family": "amazon-linux-2023/x86_64/nvidia"},
        {"name": NVIDIA_131, "kubernetes_version": "1.31", "family": "amazon-linux-2023/x86_64/nvidia"},
        {"name": AL2_132, "kubernetes_version": "1.32", "family": "amazon-linux-2"},
        # 1.33 exists for AL2023 only, as on AWS.
        {"name": AL2023_133, "kubernetes_version": "1.33"},
    ],
    "nodegroups": [
        # A Graviton instance type: EC2 runs an arm64 AMI on nothing else (the sandbox refuses it as EC2 does).
        {"name": "br-arm", "ami": BR_ARM_130, "instance_type": "m6g.large", **ONE_NODE},
        {"name": "gpu", "ami": NVIDIA_560_130, **ONE_NODE},
        {"name": "al2", "ami": AL2_132, **ONE_NODE},
    ],
}


@pytest.fixture(scope="module")
def ami_sandbox(tmp_path_factory):
    with running_sandbox(AMI_SCENARIO, tmp_path_factory.mktemp("sandbox-amis")) as handle:
        yield handle


def plan(sandbox, nodegroup, kubernetes_version):
    """launch_template_version in check mode, and the AWS/Kubernetes writes it made (must be none)."""
    before = call_counts(sandbox)
    result = run_module(sandbox, "launch_template_version", {
        "cluster_name": CLUSTER, "nodegroup_name": nodegroup, "kubernetes_version": kubernetes_version}, check=True)
    return result, mutating_calls(calls_between(before, call_counts(sandbox)))


@pytest.mark.parametrize("nodegroup, parameter, target", [
    ("br-arm", "/aws/service/bottlerocket/aws-k8s-1.31/arm64/latest/image_id", BR_ARM_131),
    ("gpu", "/aws/service/eks/optimized-ami/1.31/amazon-linux-2023/x86_64/nvidia/recommended/image_id", NVIDIA_131),
])
def test_item10_the_target_is_read_from_the_family_s_published_parameter(ami_sandbox, nodegroup, parameter, target):
    result, writes = plan(ami_sandbox, nodegroup, "1.31")
    assert not result.get("failed"), result
    assert result["launch_template"]["ssm_parameter"] == parameter
    assert result["launch_template"]["image_id"] == image_id_by_name(ami_sandbox, target)
    assert writes == {}


def test_item10_al2_to_1_33_is_refused_pointing_to_al2023(ami_sandbox):
    result, writes = plan(ami_sandbox, "al2", "1.33")
    assert result["failed"] is True and result["parameter"] == "kubernetes_version", result
    parameter = "/aws/service/eks/optimized-ami/1.33/amazon-linux-2/recommended/image_id"
    assert result["ssm_parameter"] == parameter and parameter in result["msg"]
    assert "No EKS-optimized AMI is published for Kubernetes 1.33 (kubernetes_version)" in result["msg"]
    assert "EKS publishes no Amazon Linux 2 (AL2) AMIs from Kubernetes 1.33 on" in result["msg"]
    assert "Amazon Linux 2023" in result["msg"]
    assert writes == {}


def test_item10_a_yaml_number_is_refused_asking_for_quotes(ami_sandbox):
    """`kubernetes_version: 1.30` unquoted: Ansible's str option receives "1.3"."""
    result, writes = plan(ami_sandbox, "br-arm", yaml.safe_load("v: 1.30")["v"])
    assert result["failed"] is True and result["parameter"] == "kubernetes_version", result
    assert "'1.3' is older than 1.23" in result["msg"] and 'did you mean "1.30"' in result["msg"]
    assert 'kubernetes_version: "1.30", not 1.30' in result["msg"]
    assert writes == {}
