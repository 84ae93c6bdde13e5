# -*- coding: utf-8 -*-
# Copyright: Contributors to the eksops.nodegroup project
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Errors with EKS-style codes (SPEC U8), shared by every module of the collection."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

NODE_CREATION_FAILURE = "NodeCreationFailure"
POD_EVICTION_FAILURE = "PodEvictionFailure"
ASG_INSTANCE_LAUNCH_FAILURES = "AsgInstanceLaunchFailures"
INSTANCE_LIMIT_EXCEEDED = "InstanceLimitExceeded"
INSUFFICIENT_FREE_ADDRESSES = "InsufficientFreeAddresses"
ACCESS_DENIED = "AccessDenied"
CLUSTER_UNREACHABLE = "ClusterUnreachable"
INVALID_PARAMETER = "InvalidParameter"
NOT_FOUND = "ResourceNotFound"
AUTOSCALER_ACTIVE = "ClusterAutoscalerActive"
# Not an EKS code (SPEC B3): a load balancer still held a drained node's instance after post_drain_wait, so the
# instance was not terminated.
LOAD_BALANCER_DEREGISTRATION_TIMEOUT = "LoadBalancerDeregistrationTimeout"
# Not an EKS code: an unfinished upgrade journal names another target than this run's. (EKS's own
# Ec2LaunchTemplateVersionMismatch is a health issue of a managed node group; people who see both must not
# take one for the other.)
UPGRADE_TARGET_CONFLICT = "UpgradeTargetConflict"
# Not an EKS code: the group's launch template reference no longer is the target its upgrade journal records
# (someone set the version back during the upgrade, issue 29 item 4); new instances would start with the old
# configuration, so the upgrade stopped before its next change.
LAUNCH_TEMPLATE_VERSION_CHANGED = "LaunchTemplateVersionChanged"
# Not an EKS code: the preflight found what would make the upgrade fail half-way (the cluster autoscaler deleting
# a node of the group), so nothing was changed (issue 10 item 5).
PREFLIGHT_BLOCKED = "PreflightBlocked"
# Auto Scaling's own code (StartInstanceRefresh's error): an instance refresh is active on the group, and it would
# replace nodes without a drain behind the upgrade (SPEC W2), so nothing was changed.
INSTANCE_REFRESH_IN_PROGRESS = "InstanceRefreshInProgress"
# Not an EKS code: infrastructure as code owns the group, and its next apply would revert the launch template version
# this upgrade would pin, replacing the nodes without a drain (SPEC W1), so nothing was changed.
OWNED_BY_INFRASTRUCTURE_AS_CODE = "OwnedByInfrastructureAsCode"
# Not an EKS code: the group has a warm pool, whose instances keep the launch template version they were launched with
# and are drawn first by a scale-out (SPEC W2): the surge would be old nodes, so nothing was changed.
WARM_POOL_PRESENT = "WarmPoolPresent"
# Not an EKS code: the group replaces instances by itself, without a drain (MaxInstanceLifetime, CapacityRebalance;
# SPEC W2), so nothing was changed.
REPLACES_INSTANCES_ITSELF = "ReplacesInstancesItself"
# Not an EKS code: the group has too many tags of its own for the journal and the lease to fit in Auto Scaling's 50
# (SPEC W3), so nothing was changed (the tag write would fail half-way otherwise).
TAG_LIMIT_EXCEEDED = "TagLimitExceeded"
# Not an EKS code: the group's mixed instances policy weighs its instance types (sizes in capacity units), or launches
# some types from an AMI or template of their own that the target would not change (SPEC W2), so nothing was changed.
MIXED_INSTANCES_UNSUPPORTED = "MixedInstancesUnsupported"
# Not an EKS code: the AWS API itself (or the configured endpoint_url) could not be reached.
AWS_UNREACHABLE = "AwsUnreachable"
# Not an EKS code: an AWS or Kubernetes API error that fits none of the codes above.
API_ERROR = "ApiError"
# Not an EKS code: an AWS-side wait (a termination, EKS's update followed for managed_update_timeout) ran out of time.
WAIT_TIMEOUT = "WaitTimeout"
# Not an EKS code: another live run holds the group's lease (issue 10 item 21), so this run changed nothing from there.
UPGRADE_IN_PROGRESS = "UpgradeInProgress"
# Not an EKS code: the job that ran the upgrade was cancelled, timed out or killed (SPEC W5), so the run stopped
# before its next destructive call; a rerun resumes from the journal.
JOB_STOPPED = "JobStopped"
# Not an EKS code: instances that joined the group during the upgrade still run an old launch template version; a
# rerun replaces them.
OLD_INSTANCES_LEFT = "OldInstancesLeft"
# Not an EKS code (issue 27 item 3): someone asked the run to pause (playbooks/pause_upgrade.yml); it stopped at a
# safe point, and the upgrade playbook run again resumes it.
UPGRADE_PAUSED = "UpgradePaused"
# Not an EKS code (issue 27 item 4): the next batch or phase could not end inside the maintenance window or
# max_duration_seconds; the run stopped at a safe point (or, started outside its window, changed nothing), and a run
# inside the next window goes on.
MAINTENANCE_WINDOW_CLOSED = "MaintenanceWindowClosed"
# Not an EKS code (issue 27 item 2): a CloudWatch alarm of alarm_names was in ALARM at a safe point.
ALARM_TRIGGERED = "AlarmTriggered"
# Not an EKS code (issue 27 item 5, undrainable_nodes quarantine): nodes whose drains timed out were left cordoned and
# labelled, their instances not terminated, while the run replaced the others; they still held after one more drain
# each (or more were held than max_quarantined_nodes allows). A rerun retries them.
NODES_QUARANTINED = "NodesQuarantined"
# Not an EKS code (issue 27 item 1): after a batch's soak, the workloads its drain moved were not healthy again by
# health_gate_timeout (pods Pending, Deployments or StatefulSets below their replicas); no further batch starts.
HEALTH_GATE_FAILED = "HealthGateFailed"

# Not an EKS code (issue 28 item 2): playbooks/upgrade_fleet.yml fails a node group's host with it when the node group
# did not end on its target (its run's own code is in the message and the fleet's report); the play's
# max_fail_percentage then cancels every later wave.
FLEET_WAVE_FAILED = "FleetWaveFailed"

# Every code above: what a failure of the collection carries (the upgrade_error action takes no other).
CODES = (NODE_CREATION_FAILURE, POD_EVICTION_FAILURE, ASG_INSTANCE_LAUNCH_FAILURES, INSTANCE_LIMIT_EXCEEDED,
         INSUFFICIENT_FREE_ADDRESSES, ACCESS_DENIED, CLUSTER_UNREACHABLE, INVALID_PARAMETER, NOT_FOUND,
         AUTOSCALER_ACTIVE, LOAD_BALANCER_DEREGISTRATION_TIMEOUT, UPGRADE_TARGET_CONFLICT,
         LAUNCH_TEMPLATE_VERSION_CHANGED, PREFLIGHT_BLOCKED, INSTANCE_REFRESH_IN_PROGRESS,
         OWNED_BY_INFRASTRUCTURE_AS_CODE, WARM_POOL_PRESENT, REPLACES_INSTANCES_ITSELF, TAG_LIMIT_EXCEEDED,
         MIXED_INSTANCES_UNSUPPORTED, AWS_UNREACHABLE, API_ERROR, WAIT_TIMEOUT, UPGRADE_IN_PROGRESS, JOB_STOPPED,
         OLD_INSTANCES_LEFT, UPGRADE_PAUSED, MAINTENANCE_WINDOW_CLOSED, ALARM_TRIGGERED, NODES_QUARANTINED,
         HEALTH_GATE_FAILED, FLEET_WAVE_FAILED)

# The codes of a run that stopped at a safe point because it was asked to or its time was up, not because anything
# went wrong: the wrapper role ends such a run without failing the job, its report saying where it stopped.
STOPPED_CODES = (UPGRADE_PAUSED, MAINTENANCE_WINDOW_CLOSED)


class UpgradeError(Exception):
    """A failure the user must see, with a stable ``code`` and structured ``details``.

    ``UpgradeError(code, msg, **details)``; modules turn it into
    ``fail_json(msg=msg, code=code, **details)``.
    """

    def __init__(self, code: str, msg: str, **details: Any) -> None:
        super(UpgradeError, self).__init__(msg)
        self.code = code
        self.msg = msg
        self.details = details

    def __str__(self) -> str:
        return "%s: %s" % (self.code, self.msg)

    def __repr__(self) -> str:
        return "UpgradeError(%r, %r, **%r)" % (self.code, self.msg, self.details)


class StepFailed(Exception):
    """A step's UpgradeError and the result the step had when it failed (what a module's fail_json carries),
    raised by the phases that run steps in one process (setup, replace)."""

    def __init__(self, error: UpgradeError, result: Mapping[str, Any] | None = None,
                 accepted: Sequence[str] = ()) -> None:
        super().__init__(error.msg)
        self.error = error
        self.result = dict(result or {})
        # A termination step that failed after Auto Scaling accepted some of the batch's terminations (its first
        # round, SPEC B1): those instances are going all the same.
        self.accepted = list(accepted)


def invalid_parameter(parameter: str, msg: str, **details: Any) -> UpgradeError:
    """An INVALID_PARAMETER error whose details name the offending option."""
    return UpgradeError(INVALID_PARAMETER, msg, parameter=parameter, **details)


def not_found(parameter: str, msg: str, **details: Any) -> UpgradeError:
    """A NOT_FOUND error whose details name the option that pointed at the missing resource."""
    return UpgradeError(NOT_FOUND, msg, parameter=parameter, **details)
