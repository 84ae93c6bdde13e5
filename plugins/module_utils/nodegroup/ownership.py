# -*- coding: utf-8 -*-
# Copyright: Contributors to the eksops.nodegroup project
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Who owns a self-managed node group, as far as AWS shows it, and what its next apply does to a launch template
version the upgrade pins behind its back (SPEC W1). Pure: decided from the group's tags and names.

- CloudFormation tags every group it creates ``aws:cloudformation:stack-name`` (AWS::AutoScaling::AutoScalingGroup
  TagProperty: "CloudFormation adds the following tags to all Auto Scaling groups"); eksctl's unmanaged node groups
  are such stacks, with the ``alpha.eksctl.io/*`` stack tags besides. The stack's group follows
  ``!GetAtt <template>.LatestVersionNumber``: the next stack update that touches the template makes a version from
  the stack's own data (its AMI) and replaces the nodes with AutoScalingRollingUpdate, without a drain.
- terraform leaves no tag, but terraform-aws-eks's self-managed-node-group leaves a shape: the group named
  ``<Name tag>-<name_prefix suffix>`` with ``k8s.io/cluster/<cluster>=owned`` beside ``kubernetes.io/cluster/<cluster>``
  (modules/self-managed-node-group/main.tf). Its group follows the template's default version, which the apply
  renders from the code: the next apply makes a version with the code's AMI, points the group at it and starts an
  instance refresh (Rolling, 66 % healthy) that replaces every node without a drain.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import NamedTuple

from ansible_collections.eksops.nodegroup.plugins.module_utils.nodegroup.kinds import terraform_name_prefixed

CLOUDFORMATION_STACK_TAG = "aws:cloudformation:stack-name"
EKSCTL_TAG_PREFIX = "alpha.eksctl.io/"


class Owner(NamedTuple):
    """The infrastructure as code that owns a group: the tool, what shows it, what its next apply does to a version
    pinned behind its back, and how to upgrade with it instead (the workflow a refusal names)."""

    tool: str
    evidence: str
    revert: str
    workflow: str


def group_owner(asg_name: str, tags: Mapping[str, str], cluster_name: str) -> Owner | None:
    """The group's owner (None when AWS shows none)."""
    stack = tags.get(CLOUDFORMATION_STACK_TAG)
    if stack and any(key.startswith(EKSCTL_TAG_PREFIX) for key in tags):
        return Owner(
            "eksctl", "CloudFormation stack %s, tagged alpha.eksctl.io/*" % stack,
            "eksctl does not update an unmanaged node group's launch template, but stack %s still names the version "
            "it made, so an update of the stack that touches the group can point it back at that version" % stack,
            "eksctl's own upgrade of an unmanaged node group: create a new node group with the new AMI (eksctl create "
            "nodegroup), then eksctl delete nodegroup on the old one, which drains it")
    if stack:
        return Owner(
            "CloudFormation", "tag %s=%s" % (CLOUDFORMATION_STACK_TAG, stack),
            "the next update of stack %s that touches its launch template makes a version with the stack's AMI, "
            "points the group at it and replaces every node with AutoScalingRollingUpdate, without a drain" % stack,
            "change NodeImageId in stack %s with the template's AutoScalingRollingUpdate policy removed, update the "
            "stack, then run with use_current_launch_template=true" % stack)
    if terraform_name_prefixed(asg_name, tags.get("Name") or "") \
            and tags.get("k8s.io/cluster/%s" % cluster_name) == "owned":
        return Owner(
            "terraform-aws-eks", "its name and tags are those modules/self-managed-node-group gives a group",
            "the next terraform apply makes a launch template version with the code's AMI, points the group at it "
            "and starts the module's instance refresh, which replaces every node without a drain",
            "set the new AMI in your terraform code (ami_id) with instance_refresh = {}, terraform apply, then run "
            "with use_current_launch_template=true")
    return None


def revert_refusal(owner: Owner, asg_name: str, target: str, parameter: str) -> str:
    """Why pinning ``target`` (e.g. "a new version with AMI ami-1"), which ``parameter`` asked for, on an owned group
    is refused, and what to do."""
    return ("Auto Scaling group %s is owned by %s (%s), and this upgrade would pin it to %s (%s) behind its back: %s. "
            "Upgrade it with its owner's workflow instead: %s. To pin the version anyway and restore the group "
            "through its owner yourself, set accept_owner_revert=true. Nothing was changed."
            % (asg_name, owner.tool, owner.evidence, target, parameter, owner.revert, owner.workflow))
