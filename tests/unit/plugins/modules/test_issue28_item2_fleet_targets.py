# -*- coding: utf-8 -*-
# Copyright: Contributors to the eksops.nodegroup project
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Issue 28 item 2: module fleet_targets reads every node group's target from SSM once for the whole fleet - the
parameter the single-group path reads (a self-managed group's AMI family, a managed group's amiType), each
distinct parameter once - so the fleet's waves cannot mix AMIs; what it cannot resolve is refused naming
kubernetes_version and the host, before any change."""

from __future__ import annotations

import pytest
from moto import mock_aws

from ansible_collections.eksops.nodegroup.plugins.modules import fleet_targets
from ansible_collections.eksops.nodegroup.plugins.module_utils.steps import fleet_targets as fleet_targets_step

from ..moto_nodegroup import publish_eks_ami, publish_ssm_parameter, run_step_in_process

AL2023 = "amazon-eks-node-al2023-x86_64-standard-1.29-v20240601"
ARM = "amazon-eks-node-al2023-arm64-standard-1.29-v20240601"
RELEASE = "/aws/service/eks/optimized-ami/1.30/amazon-linux-2023/x86_64/standard/recommended/release_version"
FLEET = [
    dict(host="west/apps", kind="self_managed", nodegroup_image_name=AL2023),
    dict(host="west/batch", kind="self_managed", nodegroup_image_name=AL2023),
    dict(host="west/arm", kind="self_managed_eksctl", nodegroup_image_name=ARM),
    dict(host="west/system", kind="managed", nodegroup_ami_type="AL2023_x86_64_STANDARD"),
]


@pytest.fixture
def run():
    def run_it(nodegroups, calls=None):
        return run_step_in_process(fleet_targets_step, fleet_targets, dict(kubernetes_version="1.30", nodegroups=nodegroups),
                                   aws_calls=calls, uses_k8s=False)
    with mock_aws():
        publish_eks_ami("1.30", "amazon-linux-2023/x86_64/standard", "ami-0x86")
        publish_eks_ami("1.30", "amazon-linux-2023/arm64/standard", "ami-0arm")
        publish_ssm_parameter(RELEASE, "1.30.0-20240701")
        yield run_it


def test_issue28_item2_each_family_is_read_once_and_every_group_gets_its_target(run):
    calls = []
    result = run(FLEET, calls)
    assert not result.get("failed") and result["changed"] is False, result
    targets = result["fleet_targets"]["targets"]
    assert {host: (target["option"], target["value"]) for host, target in targets.items()} == {
        "west/apps": ("image_id", "ami-0x86"), "west/batch": ("image_id", "ami-0x86"),
        "west/arm": ("image_id", "ami-0arm"), "west/system": ("release_version", "1.30.0-20240701")}
    assert targets["west/system"]["ssm_parameter"] == RELEASE
    assert calls.count("GetParameter") == 3 == len(result["fleet_targets"]["parameters"])


def test_issue28_item2_a_custom_ami_managed_group_is_refused_naming_it(run):
    calls = []
    result = run(FLEET + [dict(host="eu/custom", kind="managed", nodegroup_ami_type="CUSTOM")], calls)
    assert result["failed"] and result["parameter"] == "kubernetes_version", result
    assert "eu/custom" in result["msg"] and "--limit" in result["msg"]
    assert "GetParameter" not in calls


def test_issue28_item2_an_unpublished_version_names_the_groups_and_the_parameter(run):
    result = run([dict(FLEET[0], nodegroup_image_name="amazon-eks-node-1.29-v20240601")])
    assert result["failed"] and result["parameter"] == "kubernetes_version", result
    assert "west/apps" in result["msg"] and "amazon-linux-2/recommended/image_id" in result["msg"]


def test_issue28_item2_an_unknown_ami_family_names_the_host(run):
    result = run([dict(FLEET[0], nodegroup_image_name="my-golden-image-7")])
    assert result["failed"] and result["msg"].startswith("west/apps: ")


# Issue 28 item 2, "targets that survive a rerun and a workflow": the targets a previous run resolved are taken as
# they are, with no SSM read, so a recommendation published since cannot mix AMIs across the fleet's runs.
PREVIOUS = {"us-east-1": {
    "/aws/service/eks/optimized-ami/1.30/amazon-linux-2023/x86_64/standard/recommended/image_id": "ami-0123456789abcdef0",
    "/aws/service/eks/optimized-ami/1.30/amazon-linux-2023/arm64/standard/recommended/image_id": "ami-0fedcba9876543210",
    RELEASE: "1.30.0-20240615"}}


@pytest.fixture
def rerun():
    def run_it(nodegroups, previous, calls):
        return run_step_in_process(
            fleet_targets_step, fleet_targets, dict(kubernetes_version="1.30", nodegroups=nodegroups,
                                                    fleet_targets=previous, region="us-east-1"), aws_calls=calls, uses_k8s=False)
    with mock_aws():
        # SSM recommends newer targets since: the rerun must not see them.
        publish_eks_ami("1.30", "amazon-linux-2023/x86_64/standard", "ami-0newer")
        publish_ssm_parameter(RELEASE, "1.30.0-20240701")
        yield run_it


def test_issue28_item2_targets_that_survive_a_rerun_and_a_workflow(rerun):
    calls = []
    result = rerun(FLEET, PREVIOUS, calls)
    assert not result.get("failed"), result
    assert {host: target["value"] for host, target in result["fleet_targets"]["targets"].items()} == {
        "west/apps": "ami-0123456789abcdef0", "west/batch": "ami-0123456789abcdef0",
        "west/arm": "ami-0fedcba9876543210", "west/system": "1.30.0-20240615"}
    assert result["fleet_targets"]["parameters"] == PREVIOUS["us-east-1"]
    assert "GetParameter" not in calls


@pytest.mark.parametrize("previous, named", [
    ({"eu-west-1": PREVIOUS["us-east-1"]}, "none for region us-east-1"),
    ({"us-east-1": dict(PREVIOUS["us-east-1"], **{RELEASE: "latest"})}, "west/system"),
    ({"us-east-1": {RELEASE: "1.30.0-20240615"}}, "west/apps"),
    ({"us-east-1": dict(PREVIOUS["us-east-1"], **{RELEASE: "ami-0123456789abcdef0"})}, "release_version"),
])
def test_issue28_item2_targets_that_survive_a_rerun_refuse_a_missing_or_malformed_target(rerun, previous, named):
    calls = []
    result = rerun(FLEET, previous, calls)
    assert result["failed"] and result["parameter"] == "fleet_targets", result
    assert named in result["msg"] and "fleet_targets" in result["msg"]
    assert "GetParameter" not in calls


def test_issue28_item2_review_5d_an_unknown_ami_family_blames_the_hosts_ami_not_kubernetes_version(run):
    result = run([dict(FLEET[0], nodegroup_image_name="my-golden-image-7")])
    assert result["failed"] and result["parameter"] == "nodegroup_image_name", result
    assert "west/apps: its current AMI 'my-golden-image-7'" in result["msg"] and "--limit" in result["msg"]
    assert "pass image_id instead" not in result["msg"]
