# -*- coding: utf-8 -*-
# Copyright: Contributors to the eksops.nodegroup project
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""What the infrastructure as code that owns a self-managed node group does to it when its owner applies (SPEC W1):
a terraform apply of terraform-aws-eks's self-managed-node-group, or a CloudFormation stack update of the EKS node
group template. eksctl never updates an unmanaged node group's launch template (its documented upgrade is a new node
group), so it has no apply here.

terraform-aws-eks, modules/self-managed-node-group/main.tf and variables.tf (and the AWS provider's
aws_launch_template and aws_autoscaling_group):
- ``aws_launch_template`` renders its data from the code (``image_id = var.ami_id``), reads the template's *latest*
  version, and when they differ creates a new version and, with ``update_default_version = true`` (the module's
  default), makes it the default.
- ``aws_autoscaling_group`` uses ``launch_template { version = aws_launch_template.this[0].default_version }``: the
  apply points the group back at the default version whenever it points elsewhere.
- ``instance_refresh`` defaults to ``{strategy = "Rolling", preferences = {min_healthy_percentage = 66}}``; the
  provider starts a refresh when the group's launch_template changes (cancelling one in progress first), and does not
  wait for it. A refresh drains no node.

The CloudFormation template (amazon-eks-nodegroup.yaml, which the EKS user guide links; the same shape in eksctl's
stacks): ``NodeLaunchTemplate`` with ``ImageId: !Ref NodeImageId``, the group on ``Version: !GetAtt
NodeLaunchTemplate.LatestVersionNumber`` and ``UpdatePolicy: AutoScalingRollingUpdate: MaxBatchSize: 1,
MinInstancesInService: <desired>``. A stack update compares templates and parameters, not the live resources: only
a changed NodeImageId (or other template property) updates the launch template, with the stack's own data (not the
live latest version's), moves the group to the new LatestVersionNumber and replaces the instances one at a time,
without a drain ("update-stack" page of the EKS user guide).
"""

from __future__ import annotations

import copy
import json
from typing import Any

from moto.autoscaling.models import FakeAutoScalingGroup

from . import instance_refresh
from .mixed_instances import merged_policy

__all__ = ["TERRAFORM_INSTANCE_REFRESH", "Owner", "owner_of"]

# terraform-aws-eks variables.tf, variable "instance_refresh": its default.
TERRAFORM_INSTANCE_REFRESH = {"MinHealthyPercentage": 66}
# The template's UpdatePolicy: one instance at a time while the desired capacity stays in service.
CLOUDFORMATION_ROLLING_UPDATE = {"MinHealthyPercentage": 100}


class Owner:
    """The code that owns one self-managed node group: its AMI, and what its apply does."""

    def __init__(self, tool: str, group: FakeAutoScalingGroup, ami_id: str) -> None:
        self.tool = tool
        self.group = group
        template = group.ec2_launch_template
        # What the code renders into the template: the seeded version's data, with the code's AMI.
        self.rendered = copy.deepcopy(template.get_version(1).data)
        self.ami_id = ami_id
        self.applied_ami_id = ami_id  # CloudFormation: the NodeImageId of the last stack update
        # What replaces the nodes when the apply changes the group's launch template: terraform-aws-eks's
        # instance_refresh, the stack template's AutoScalingRollingUpdate policy (both on as shipped).
        self.instance_refresh = True

    def apply(self, ami_id: str | None = None, instance_refresh: bool | None = None) -> list[str]:
        """The owner's apply with the code changed as given (``instance_refresh``: terraform's instance_refresh, or
        the stack's AutoScalingRollingUpdate policy); returns what it did, in words."""
        if ami_id is not None:
            self.ami_id = ami_id
        if instance_refresh is not None:
            self.instance_refresh = instance_refresh
        return self._terraform_apply() if self.tool == "terraform" else self._stack_update()

    def _wanted(self) -> dict[str, Any]:
        return dict(copy.deepcopy(self.rendered), ImageId=self.ami_id)

    def _terraform_apply(self) -> list[str]:
        done = []
        template = self.group.ec2_launch_template
        if _comparable(template.latest_version().data) != _comparable(self._wanted()):
            version = template.create_version(self._wanted(), "")
            template.default_version_number = version.number
            done.append("created launch template version %d (%s) and made it the default" % (
                version.number, self.ami_id))
        default = str(template.default_version_number)
        if self.group.launch_template_version != default:
            self._point_group_at(default)
            done.append("pointed the Auto Scaling group at launch template version %s" % default)
            if self.instance_refresh:
                active = instance_refresh.active_refresh(self.group)
                if active is not None and active.listed:
                    instance_refresh.cancel_instance_refresh(self.group)
                    instance_refresh.advance_refreshes(self.group, template.default_version_number)
                instance_refresh.replace_rolling(self.group, dict(TERRAFORM_INSTANCE_REFRESH))
                done.append("started an instance refresh (Rolling, MinHealthyPercentage 66)")
        return done

    def _stack_update(self) -> list[str]:
        if self.ami_id == self.applied_ami_id:
            return []  # the stack's template and parameters are unchanged: CloudFormation updates nothing
        self.applied_ami_id = self.ami_id
        template = self.group.ec2_launch_template
        version = template.create_version(self._wanted(), "")
        self._point_group_at(str(version.number))
        done = ["created launch template version %d (%s)" % (version.number, self.ami_id),
                "pointed the Auto Scaling group at launch template version %d" % version.number]
        if self.instance_refresh:
            instance_refresh.replace_rolling(self.group, dict(CLOUDFORMATION_ROLLING_UPDATE), listed=False)
            done.append("started the stack's rolling update (AutoScalingRollingUpdate, MaxBatchSize 1)")
        return done

    def _point_group_at(self, version: str) -> None:
        spec = {"LaunchTemplateId": self.group.ec2_launch_template.id, "Version": version}
        if self.group.mixed_instances_policy:  # the module's mixed_instances_policy.launch_template_specification
            policy = merged_policy(self.group.mixed_instances_policy,
                                   {"LaunchTemplate": {"LaunchTemplateSpecification": spec}})
            self.group.mixed_instances_policy = policy
            self.group._set_launch_configuration(None, None, policy)
        else:
            self.group._set_launch_configuration(None, spec, None)


def _comparable(data: dict[str, Any]) -> str:
    """Launch template data in a form that compares by value (moto's Base64EncodedString compares by identity)."""
    return json.dumps(data, sort_keys=True, default=repr)


def owner_of(nodegroup: dict[str, Any], group: FakeAutoScalingGroup, ami_id: str) -> Owner | None:
    """The owner of a seeded node group, as the scenario's kind and convention say (None: eksctl, managed)."""
    if nodegroup["kind"] != "self_managed":
        return None
    return Owner("terraform" if nodegroup["convention"] == "terraform" else "cloudformation", group, ami_id)
