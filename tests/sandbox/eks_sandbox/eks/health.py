# -*- coding: utf-8 -*-
# Copyright: Contributors to the eksops.nodegroup project
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""EKS reconciles what it owns: a managed node group whose Auto Scaling group is gone, or launches from another
launch template or version than the one EKS set, shows a health issue and turns DEGRADED; the issue clears when
the group is put back.

Sources: botocore's EKS model, Issue.code ("Ec2LaunchTemplateVersionMismatch: The Amazon EC2 launch template
version for your managed node group does not match the version that Amazon EKS created. You may be able to revert
to the version that Amazon EKS created to recover." and "AutoScalingGroupNotFound: We couldn't find the Auto
Scaling group associated with the managed node group. You may be able to recreate an Auto Scaling group with the
same settings to recover."); the issue message EKS shows for the mismatch is AWS's knowledge-center wording
(quoted in nebari-dev/nebari#2668): "The Amazon EC2 Launch Template : lt-xxxxxxxxxxxxxxxxx has a new version
associated with your Autoscaling group, which is not managed by Amazon EKS. Expected Launch Template version: x".
"""

from __future__ import annotations

from typing import Any

from moto.autoscaling.models import FakeAutoScalingGroup

from .records import ManagedNodegroup

__all__ = ["health_issues"]

ASG_NOT_FOUND = ("We couldn't find the Auto Scaling group associated with the managed node group. You may be able "
                 "to recreate an Auto Scaling group with the same settings to recover.")


def health_issues(record: ManagedNodegroup, group: FakeAutoScalingGroup | None) -> list[dict[str, Any]]:
    """The node group's health issues now (the Issue shape)."""
    if group is None:
        return [{"code": "AutoScalingGroupNotFound", "message": ASG_NOT_FOUND, "resourceIds": [record.asg_name]}]
    template = group.ec2_launch_template
    template_id = template.id if template is not None else None
    if template_id != record.template_id or group.launch_template_version != str(record.template_version):
        message = (f"The Amazon EC2 Launch Template : {template_id or record.template_id} has a new version "
                   "associated with your Autoscaling group, which is not managed by Amazon EKS. Expected Launch "
                   f"Template version: {record.template_version}")
        return [{"code": "Ec2LaunchTemplateVersionMismatch", "message": message, "resourceIds": [group.name]}]
    return []
