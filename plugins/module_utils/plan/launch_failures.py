# -*- coding: utf-8 -*-
# Copyright: Contributors to the eksops.nodegroup project
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""What a failed Auto Scaling launch means (U3, U8): its cause and code, whether retrying can fix it, and the
error it ends the wait with. Pure: activities in, plain values and an UpgradeError out.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any
import json
import re

from ansible_collections.eksops.nodegroup.plugins.module_utils.errors import (
    ASG_INSTANCE_LAUNCH_FAILURES,
    INSTANCE_LIMIT_EXCEEDED,
    INSUFFICIENT_FREE_ADDRESSES,
    NODE_CREATION_FAILURE,
    UpgradeError,
)

# Launch errors of failed ASG scaling activities, matched on the activity's StatusMessage (SPEC U3, U8).
_LAUNCH_FAILURE_PATTERNS = (
    (INSTANCE_LIMIT_EXCEEDED, "instance quota exceeded",
     re.compile(r"InstanceLimitExceeded|VcpuLimitExceeded|(instance|vCPU) limit", re.IGNORECASE)),
    (INSUFFICIENT_FREE_ADDRESSES, "no free IP addresses in the subnet",
     re.compile(r"InsufficientFreeAddresses|free (IP )?addresses", re.IGNORECASE)),
    (NODE_CREATION_FAILURE, "insufficient EC2 capacity",
     re.compile(r"InsufficientInstanceCapacity|sufficient .*capacity", re.IGNORECASE)),
    (ASG_INSTANCE_LAUNCH_FAILURES, "the launch template or its resources are invalid",
     re.compile(r"InvalidAMIID|InvalidLaunchTemplate|InvalidParameter|Unsupported|InvalidGroup|"
                r"InvalidSubnet|InvalidKeyPair|iamInstanceProfile|not authorized|Client\.",
                re.IGNORECASE)),
)
_AZ_PATTERN = re.compile(r"\b([a-z]{2}(?:-[a-z]+)+-\d[a-z])\b")
_INSTANCE_PATTERN = re.compile(r"\b(i-[0-9a-f]{8,17})\b")


def _activity_details(activity: Mapping[str, Any]) -> dict[str, Any]:
    try:
        details = json.loads(activity.get("Details") or "{}")
    except ValueError:
        return {}
    return details if isinstance(details, dict) else {}


# Issue 10 item 8: one failed launch aborted (and rolled back) a whole upgrade in 2.4 s. EC2 answers
# InsufficientInstanceCapacity when it has no capacity for the instance type in an AZ right now, and says to try
# again later or elsewhere (EC2 API error codes); Auto Scaling retries the AZ by itself. Every other launch error
# (a quota, no free addresses, an invalid template, AMI or profile) recurs on each retry. So a wait for new nodes
# ends at once on those, and on capacity errors only once an AZ has failed this many launches since it began.
TRANSIENT_LAUNCH_CAUSES = frozenset(["insufficient EC2 capacity", "instance launch failed"])
PERSISTENT_FAILURES_PER_AZ = 3


def persistent_launch_failure(failures: Sequence[dict[str, Any]], limit: int = PERSISTENT_FAILURES_PER_AZ) -> dict[str, Any] | None:
    """The launch failure (of ``failures``, newest first) that retrying cannot fix, or None to keep waiting: the
    newest one of a kind no retry fixes, else the newest one of an AZ with ``limit`` failures or more."""
    for failure in failures:
        if failure["cause"] not in TRANSIENT_LAUNCH_CAUSES:
            return failure
    per_az = {}
    for failure in failures:
        per_az[failure["availability_zone"]] = per_az.get(failure["availability_zone"], 0) + 1
    for failure in failures:
        if per_az[failure["availability_zone"]] >= limit:
            return failure
    return None


def launch_failure(activity: Mapping[str, Any]) -> dict[str, Any] | None:
    """A failed launch activity as {code, cause, availability_zone, instance_id, message}; else None."""
    if activity.get("StatusCode") != "Failed":
        return None
    description = activity.get("Description") or ""
    if "launch" not in description.lower():
        return None
    message = activity.get("StatusMessage") or activity.get("Cause") or ""
    code, cause = NODE_CREATION_FAILURE, "instance launch failed"
    for candidate_code, candidate_cause, pattern in _LAUNCH_FAILURE_PATTERNS:
        if pattern.search(message):
            code, cause = candidate_code, candidate_cause
            break
    details = _activity_details(activity)
    text = " ".join([description, message, activity.get("Cause") or ""])
    az = details.get("Availability Zone")
    if not az:
        match = _AZ_PATTERN.search(text)
        az = match.group(1) if match else None
    instance = _INSTANCE_PATTERN.search(text)
    return {
        "code": code,
        "cause": cause,
        "availability_zone": az,
        "instance_id": instance.group(1) if instance else None,
        "message": message,
        "activity_id": activity.get("ActivityId"),
    }


def launch_failure_error(failure: Mapping[str, Any], asg_name: str, what: str = "a node") -> UpgradeError:
    """The error of a persistent launch failure (persistent_launch_failure), with its code (U8) and where it
    happened; ``what`` the group was launching ("a node", "a replacement")."""
    where = failure["availability_zone"] or "an unknown Availability Zone"
    instance = " (instance %s)" % failure["instance_id"] if failure["instance_id"] else ""
    return UpgradeError(
        failure["code"], "Auto Scaling group %s failed to launch %s in %s%s: %s: %s"
        % (asg_name, what, where, instance, failure["cause"], failure["message"]),
        asg_name=asg_name, availability_zone=failure["availability_zone"], instance_id=failure["instance_id"],
        cause=failure["cause"], activity_id=failure["activity_id"])
