# -*- coding: utf-8 -*-
# Copyright: Contributors to the eksops.nodegroup project
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Instance refreshes, which moto 5.2.5 does not implement (StartInstanceRefresh raises NotImplementedError;
DescribeInstanceRefreshes and CancelInstanceRefresh are missing), and the rolling replacement a CloudFormation stack
update makes (``AutoScalingRollingUpdate``), which replaces instances the same way: none of them drains a node.

Modelled on the Amazon EC2 Auto Scaling User Guide, "Use an instance refresh to update instances in an Auto Scaling
group" (https://docs.aws.amazon.com/autoscaling/ec2/userguide/asg-instance-refresh.html), "Check the status of an
instance refresh" (check-status-instance-refresh.html), "Suspend and resume Amazon EC2 Auto Scaling processes"
(as-suspend-resume-processes.html) and botocore's autoscaling model (StartInstanceRefresh, RefreshPreferences,
InstanceRefresh, InstanceRefreshStatus, the InstanceRefreshInProgress and ActiveInstanceRefreshNotFound errors):

- A refresh is ``Pending``, then ``InProgress`` until ``Successful``, ``Failed``, ``Cancelled``, ``RollbackSuccessful``
  or ``RollbackFailed``; ``Cancelling``, ``RollbackInProgress`` and ``Baking`` are active too. StartInstanceRefresh
  while one is active fails with InstanceRefreshInProgress ("an active instance refresh already exists");
  CancelInstanceRefresh without one fails with ActiveInstanceRefreshNotFound.
- Rolling: instances are replaced in batches that keep ``MinHealthyPercentage`` (default 90) of the desired capacity
  healthy, at least one instance at a time ("Setting the minimum healthy percentage to 100 percent limits the rate
  of replacement to one instance at a time"); without MaxHealthyPercentage, "Auto Scaling terminates an instance and
  launches its replacement simultaneously" (the group's desired capacity is unchanged, so the reconciler launches the
  replacement). The next batch waits for the replacements to be InService. ``SkipMatching`` leaves instances that
  already run the group's launch template version; without it every instance in service at the start is replaced.
- Suspending ``InstanceRefresh`` "pauses the operation without canceling it"; with ``Launch`` or ``Terminate``
  suspended "InstanceRefresh does not replace instances" either.

Where the sandbox had to choose: MaxHealthyPercentage, InstanceWarmup, checkpoints, bake time and DesiredConfiguration
are accepted and reported but not acted on (replacements are terminate-then-launch, a batch goes on once its
replacements are InService); a refresh never fails or rolls back on its own. A stack update's rolling replacement
(``replace_rolling(..., listed=False)``) uses the same engine and is not listed by DescribeInstanceRefreshes, as on AWS.
"""

from __future__ import annotations

import math
import uuid
from typing import Any

from moto.autoscaling.exceptions import AutoscalingClientError

from . import lifecycle
from .activities import aws_time, record_activity, utcnow

__all__ = ["ACTIVE_STATUSES", "start_instance_refresh", "describe_instance_refreshes", "cancel_instance_refresh",
           "advance_refreshes", "replace_rolling"]

ACTIVE_STATUSES = ("Pending", "InProgress", "Cancelling", "RollbackInProgress", "Baking")
_PAUSING_PROCESSES = ("InstanceRefresh", "Launch", "Terminate")
DEFAULT_MIN_HEALTHY_PERCENTAGE = 90


class InstanceRefreshInProgress(AutoscalingClientError):
    def __init__(self, group_name: str) -> None:
        super().__init__("InstanceRefreshInProgress",
                         f"An Instance Refresh is already in progress and blocks the execution of this Instance "
                         f"Refresh for group {group_name}.")


class ActiveInstanceRefreshNotFound(AutoscalingClientError):
    def __init__(self, group_name: str) -> None:
        super().__init__("ActiveInstanceRefreshNotFound",
                         f"No in progress or pending Instance Refresh found for Auto Scaling group {group_name}")


class Refresh:
    """One refresh (or one stack update's rolling replacement) of a group."""

    def __init__(self, group: Any, strategy: str, preferences: dict[str, Any], desired: dict[str, Any] | None,
                 listed: bool) -> None:
        self.id = str(uuid.uuid4())
        self.group = group
        self.strategy = strategy
        self.preferences = dict(preferences)
        self.desired_configuration = desired
        self.listed = listed
        self.status = "Pending"
        self.status_reason: str | None = None
        self.start_time = utcnow()
        self.end_time = None
        self.to_replace: list[str] = []
        self.replaced: list[str] = []

    @property
    def min_healthy_percentage(self) -> int:
        return int(self.preferences.get("MinHealthyPercentage", DEFAULT_MIN_HEALTHY_PERCENTAGE))

    def to_api(self) -> dict[str, Any]:
        total = len(self.to_replace)
        done = len(self.replaced)
        refresh = {"InstanceRefreshId": self.id, "AutoScalingGroupName": self.group.name, "Status": self.status,
                   "StartTime": self.start_time, "PercentageComplete": 100 * done // total if total else 0,
                   "InstancesToUpdate": total - done, "Preferences": self.preferences, "Strategy": self.strategy}
        if self.status_reason:
            refresh["StatusReason"] = self.status_reason
        if self.end_time is not None:
            refresh["EndTime"] = self.end_time
        if self.desired_configuration:
            refresh["DesiredConfiguration"] = self.desired_configuration
        return refresh


def _refreshes(group: Any) -> list[Refresh]:
    if not hasattr(group, "sandbox_refreshes"):
        group.sandbox_refreshes = []
    return group.sandbox_refreshes


def active_refresh(group: Any) -> Refresh | None:
    return next((r for r in _refreshes(group) if r.status in ACTIVE_STATUSES), None)


def replace_rolling(group: Any, preferences: dict[str, Any], strategy: str = "Rolling",
                    desired: dict[str, Any] | None = None, listed: bool = True) -> Refresh:
    """Start replacing the group's instances (StartInstanceRefresh, or a stack update's rolling update)."""
    if active_refresh(group) is not None:
        raise InstanceRefreshInProgress(group.name)
    refresh = Refresh(group, strategy, preferences, desired, listed)
    _refreshes(group).append(refresh)
    return refresh


def start_instance_refresh(group: Any, strategy: str | None, preferences: dict[str, Any] | None,
                           desired: dict[str, Any] | None) -> str:
    return replace_rolling(group, preferences or {}, strategy or "Rolling", desired).id


def describe_instance_refreshes(group: Any, ids: list[str] | None) -> list[dict[str, Any]]:
    """The group's refreshes, newest first (only those asked for, when ids are given)."""
    listed = [r for r in reversed(_refreshes(group)) if r.listed and (not ids or r.id in ids)]
    return [r.to_api() for r in listed]


def cancel_instance_refresh(group: Any) -> str:
    refresh = active_refresh(group)
    if refresh is None or not refresh.listed:
        raise ActiveInstanceRefreshNotFound(group.name)
    refresh.status, refresh.status_reason = "Cancelling", "Cancelling the instance refresh."
    return refresh.id


def _launched_version(state: Any) -> int | None:
    launched = getattr(state.instance, "sandbox_launch_template", None)
    return launched[1] if launched else None


def _begin(refresh: Refresh, current_version: int | None) -> None:
    in_service = [s for s in refresh.group.instance_states if s.lifecycle_state in ("Pending", "InService")]
    if refresh.preferences.get("SkipMatching"):
        in_service = [s for s in in_service if _launched_version(s) != current_version]
    refresh.to_replace = [s.instance.id for s in in_service]
    refresh.status = "InProgress"


def _finish(refresh: Refresh, status: str, reason: str | None = None) -> None:
    refresh.status, refresh.status_reason, refresh.end_time = status, reason, utcnow()


def advance_refreshes(group: Any, current_version: int | None) -> None:
    """One pass of the group's active refresh: start it, cancel it, or replace the next batch."""
    refresh = active_refresh(group)
    if refresh is None:
        return
    if refresh.status == "Cancelling":
        _finish(refresh, "Cancelled", "The instance refresh was cancelled.")
        return
    if refresh.status == "Pending":
        _begin(refresh, current_version)
    suspended = set(group._suspended_processes)
    if suspended & set(_PAUSING_PROCESSES):
        refresh.status_reason = "Waiting for the suspended processes %s to be resumed." % ", ".join(
            sorted(suspended & set(_PAUSING_PROCESSES)))
        return
    refresh.status_reason = None
    states = group.instance_states
    live = [s for s in states if s.lifecycle_state in ("Pending", "InService")]
    desired = group.desired_capacity or 0
    busy = any(s.lifecycle_state == "Pending" or s.lifecycle_state.startswith("Terminating") for s in states)
    if busy or len(live) < desired:
        return  # the last batch's replacements are not in service yet
    remaining = [s for s in live if s.instance.id in refresh.to_replace and s.instance.id not in refresh.replaced]
    if not remaining:
        _finish(refresh, "Successful")
        return
    healthy_needed = math.ceil(desired * refresh.min_healthy_percentage / 100)
    batch = max(1, len(live) - healthy_needed)
    for state in remaining[:batch]:
        refresh.replaced.append(state.instance.id)
        state.instance.sandbox_activity = record_activity(
            group, f"Terminating EC2 instance: {state.instance.id}",
            f"At {aws_time(utcnow())} an instance was taken out of service in response to an instance refresh.")
        lifecycle.begin_termination(state)
