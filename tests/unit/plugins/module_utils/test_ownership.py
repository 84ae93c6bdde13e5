# -*- coding: utf-8 -*-
# Copyright: Contributors to the eksops.nodegroup project
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Who owns a self-managed node group (SPEC W1, issue 29 item 1): the tags and names each tool leaves, from its
source (terraform-aws-eks modules/self-managed-node-group/main.tf, the CloudFormation node group template and
CloudFormation's own tags, eksctl pkg/cfn/manager)."""

from __future__ import annotations

import pytest

from ansible_collections.eksops.nodegroup.plugins.module_utils.nodegroup.ownership import group_owner, revert_refusal

from ..moto_nodegroup import eksctl_tags, self_managed_tags

TERRAFORM_ASG = "workers-2024061512000012340000000b"


def test_w1_terraform_aws_eks_is_seen_from_its_name_prefix_and_its_k8s_io_cluster_tag():
    owner = group_owner(TERRAFORM_ASG, self_managed_tags("terraform"), "demo")
    assert owner.tool == "terraform-aws-eks"
    assert "ami_id" in owner.workflow and "instance_refresh = {}" in owner.workflow
    assert "use_current_launch_template=true" in owner.workflow


@pytest.mark.parametrize("asg_name, tags", [
    ("workers", self_managed_tags("terraform")),  # no name_prefix suffix: made by other means
    (TERRAFORM_ASG, {"Name": "workers", "kubernetes.io/cluster/demo": "owned"}),  # no k8s.io/cluster tag
    (TERRAFORM_ASG, dict(self_managed_tags("terraform"), **{"k8s.io/cluster/other": "owned"},
                         **{"k8s.io/cluster/demo": "shared"})),
])
def test_w1_a_group_without_every_trace_of_an_owner_has_none(asg_name, tags):
    assert group_owner(asg_name, tags, "demo") is None


def test_w1_a_cloudformation_stack_is_seen_from_the_tags_cloudformation_adds():
    owner = group_owner("demo-workers-NodeGroup-9X4T2B7QK1LD", self_managed_tags("cloudformation"), "demo")
    assert owner.tool == "CloudFormation" and "demo-workers-nodes" in owner.evidence
    assert "NodeImageId" in owner.workflow and "AutoScalingRollingUpdate" in owner.revert


def test_w1_an_eksctl_stack_is_eksctl_and_names_its_own_upgrade():
    owner = group_owner("eksctl-demo-nodegroup-workers-NodeGroup-1K3ZQ8Y2M7P4W", eksctl_tags(), "demo")
    assert owner.tool == "eksctl" and "eksctl create nodegroup" in owner.workflow


def test_w1_the_refusal_names_the_group_the_owner_the_target_the_workflow_and_the_way_out():
    owner = group_owner(TERRAFORM_ASG, self_managed_tags("terraform"), "demo")
    message = revert_refusal(owner, TERRAFORM_ASG, "a new launch template version with ami-1", "image_id")
    for part in (TERRAFORM_ASG, "terraform-aws-eks", "ami-1 (image_id)", "without a drain",
                 "use_current_launch_template=true",
                 "accept_owner_revert=true", "Nothing was changed."):
        assert part in message
