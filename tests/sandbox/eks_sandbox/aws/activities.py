# -*- coding: utf-8 -*-
# Copyright: Contributors to the eksops.nodegroup project
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Auto Scaling scaling activities as AWS reports them (DescribeScalingActivities), with AWS's wording."""

from __future__ import annotations

import json
import uuid
from datetime import datetime, timezone
from typing import Any

__all__ = ["ScalingActivity", "aws_time", "launch_failure_message", "record_activity", "group_activities"]

IN_PROGRESS, SUCCESSFUL, FAILED = "InProgress", "Successful", "Failed"


def aws_time(moment: datetime) -> str:
    """The timestamp format AWS uses inside Cause texts: 2024-01-15T10:20:30Z."""
    return moment.strftime("%Y-%m-%dT%H:%M:%SZ")


def utcnow() -> datetime:
    return datetime.now(timezone.utc)


class ScalingActivity:
    """One scaling activity; attribute names are those moto's serializer maps to the Activity shape."""

    def __init__(self, group: Any, description: str, cause: str, status_code: str = IN_PROGRESS,
                 status_message: str | None = None, details: dict[str, str] | None = None):
        self.activity_id = str(uuid.uuid4())
        self.auto_scaling_group_name = group.name
        self.auto_scaling_group_arn = group.arn
        self.description = description
        self.cause = cause
        self.start_time = utcnow()
        self.end_time: datetime | None = None
        self.status_code = status_code
        self.status_message = status_message
        self.details = json.dumps(details or {})
        self.progress = 30 if status_code == IN_PROGRESS else 100
        if status_code != IN_PROGRESS:
            self.end_time = self.start_time

    def finish(self, status_code: str = SUCCESSFUL) -> None:
        self.status_code = status_code
        self.end_time = utcnow()
        self.progress = 100


def group_activities(group: Any) -> list[ScalingActivity]:
    """The group's activities, oldest first (kept on the moto group object so they live and die with it)."""
    if not hasattr(group, "sandbox_activities"):
        group.sandbox_activities = []
    return group.sandbox_activities


def record_activity(group: Any, *args: Any, **kwargs: Any) -> ScalingActivity:
    activity = ScalingActivity(group, *args, **kwargs)
    group_activities(group).append(activity)
    return activity


def launch_failure_message(code: str, instance_type: str, zone: str, other_zones: list[str],
                           architectures: tuple[str, str] | None = None) -> str:
    """StatusMessage of a failed launch, worded as EC2 words the error behind `code` (``architectures``: the instance
    type's and the AMI's, for InvalidParameterValue)."""
    if code == "InsufficientInstanceCapacity":
        alternatives = f" or choosing {', '.join(other_zones)}" if other_zones else ""
        text = (f"We currently do not have sufficient {instance_type} capacity in the Availability Zone you "
                f"requested ({zone}). Our system will be working on provisioning additional capacity. You can "
                f"currently get {instance_type} capacity by not specifying an Availability Zone in your request"
                f"{alternatives}.")
    elif code in ("InstanceLimitExceeded", "VcpuLimitExceeded"):
        text = ("You have requested more vCPU capacity than your current vCPU limit allows for the instance "
                "bucket that the specified instance type belongs to. Please contact AWS support to request an "
                "adjustment to this limit.")
    elif code == "InvalidParameterValue":
        # The architecture check (issue 29 item 4): the EC2 error AWS gives RunInstances for an AMI of another
        # architecture than the instance type's (its wording, as Auto Scaling quotes it in the activity).
        type_arch, ami_arch = architectures or ("?", "?")
        text = (f"The architecture '{type_arch}' of the specified instance type does not match the architecture "
                f"'{ami_arch}' of the specified AMI. Specify an instance type and an AMI that have matching "
                f"architectures, and try again. You can use 'describe-instance-types' or 'describe-images' to "
                f"discover the architecture of the instance type or AMI.")
    elif code in ("InsufficientFreeAddressesInSubnet", "InsufficientFreeAddresses"):
        text = ("There are not enough free addresses in the subnet of the Availability Zone you requested "
                f"({zone}) to satisfy the requested number of instances.")
    else:
        text = f"{code}: the instance launch in {zone} was refused."
    return f"{text} Launching EC2 instance failed."
