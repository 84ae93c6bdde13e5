# -*- coding: utf-8 -*-
# Copyright: Contributors to the eksops.nodegroup project
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Narrow corrections to moto 5.2.5 where it differs from AWS in ways the collection's tests depend on.

Each correction is one function, applied once per process by `apply_moto_corrections()`, and guarded by the
pinned moto version: the patches replace moto internals by name, so another moto version must fail loudly
instead of half-working. The corrections only change moto's classes; the per-tick work they hand over
(launching, terminating, state timers) is done by `eks_sandbox.aws.capacity.CapacityReconciler`, which keeps
its state on moto's own objects, so moto stays the single source of truth.

  (a) capacity changes are deferred to the reconciler, which launches AZ-balanced and scales in from the AZ
      with the most instances (moto launches everything at once into the first subnet);
  (b) MinSize/MaxSize/DesiredCapacity are validated with AWS's messages (moto accepts anything);
  (c) CreateLaunchTemplateVersion honours SourceVersion (moto copies nothing);
  (d) an instance reports the launch template version it was launched from (moto reports the template's
      default version for every instance);
  (e) SuspendProcesses/ResumeProcesses keep order and reasons and reject unknown names; the reconciler
      honours Launch and Terminate;
  (f) DescribeScalingActivities returns the recorded activities (moto returns none);
  (g) EC2 termination takes time (shutting-down, then terminated) and
      TerminateInstanceInAutoScalingGroup behaves as on AWS;
  (h) termination lifecycle hooks hold instances in Terminating:Wait; CompleteLifecycleAction and
      RecordLifecycleActionHeartbeat exist; PutLifecycleHook validates and reports GlobalTimeout as AWS does
      (lifecycle.py);
  (i) DescribeInstances is eventually consistent: an instance the scenario's `instance_not_visible` fault hides is
      unknown to it (InvalidInstanceID.NotFound) for a while after its launch;
  (j) an ELBv2 target that is deregistered stays `draining` (Target.DeregistrationInProgress) for its target
      group's deregistration delay before it leaves DescribeTargetHealth (moto drops it at once), and a registered
      instance that is no longer running is `unused` / Target.InvalidState;
  (k) a Classic ELB with connection draining keeps a deregistered instance `InService` ("Instance deregistration
      currently in progress.") for the draining timeout (moto drops it at once);
  (l) CreateAutoScalingGroup / UpdateAutoScalingGroup keep the group's InstanceLifecyclePolicy and
      DescribeAutoScalingGroups reports it (moto drops it); with TerminateHookAbandon ``retain`` an abandoned
      termination leaves the instance in Terminating:Retained (lifecycle.py), and TerminateInstanceInAutoScalingGroup
      terminates a retained instance (g);
  (m) StartInstanceRefresh, DescribeInstanceRefreshes and CancelInstanceRefresh exist (moto raises
      NotImplementedError or has none); the refresh's rolling replacement is instance_refresh.py's;
  (n) an Auto Scaling group holds at most 50 tags, and a call adds or removes at most 25 (moto takes any number);
  (o) CreateAutoScalingGroup / UpdateAutoScalingGroup keep MaxInstanceLifetime and (on update too) CapacityRebalance,
      and DescribeAutoScalingGroups reports them (moto drops the first and ignores the second on update);
  (p) UpdateAutoScalingGroup changes only the parts of a MixedInstancesPolicy given (moto drops the policy on any
      update without one), and an instance reports its WeightedCapacity and an override's ImageId (mixed_instances.py,
      which also says what such a group launches);
  (q) DescribeLaunchTemplateVersions honours ResolveAlias: an ImageId ``resolve:ssm:<parameter>`` is answered with
      the parameter's value (moto ignores ResolveAlias); the reconciler resolves it the same way at each launch;
  (r) PutMetricAlarm creates an alarm in INSUFFICIENT_DATA and leaves an existing alarm's state as it was (moto
      creates every alarm OK, and resets the state of one it updates).
"""

from __future__ import annotations

import copy
import inspect
import time
from typing import Any, Callable

import moto
from moto.autoscaling.exceptions import AutoscalingClientError, ValidationError
from moto.autoscaling.models import AutoScalingBackend, FakeAutoScalingGroup, InstanceState
from moto.autoscaling.responses import AutoScalingResponse
from moto.cloudwatch.models import CloudWatchBackend
from moto.core.responses import ActionResult
from moto.core.responses import EmptyResult
from moto.ec2.exceptions import InvalidInstanceIdError, InvalidParameterCombination, OperationNotPermitted4
from moto.ec2.models.instances import InstanceBackend
from moto.ec2.models.instances import InstanceState as Ec2InstanceState
from moto.ec2.responses.instances import InstanceResponse
from moto.ec2.responses.launch_templates import LaunchTemplates
from moto.ec2.utils import parse_user_data
from moto.elb.models import ELBBackend
from moto.elb.models import LoadBalancer as ClassicLoadBalancer
from moto.elb.responses import ELBResponse
from moto.elbv2.models import ELBv2Backend, FakeHealthStatus, FakeTargetGroup
from moto.ssm.exceptions import ParameterVersionNotFound
from moto.ssm.models import ssm_backends

from . import instance_refresh, lifecycle
from .activities import aws_time, group_activities, record_activity, utcnow
from .mixed_instances import correct_mixed_instances

__all__ = ["PINNED_MOTO_VERSION", "SCALING_PROCESSES", "MotoVersionError", "apply_moto_corrections",
           "check_moto_version", "instance_visible", "note_capacity_change", "suspended_process_names",
           "draining_targets", "registered_at", "classic_draining_instances", "classic_draining_timeout",
           "resolve_image_id"]

PINNED_MOTO_VERSION = "5.2.5"

SCALING_PROCESSES = ("Launch", "Terminate", "AddToLoadBalancer", "AlarmNotification", "AZRebalance",
                     "HealthCheck", "InstanceRefresh", "ReplaceUnhealthy", "ScheduledActions")

# ASG lifecycle states that count towards the group's capacity.
LIVE_LIFECYCLE_STATES = ("Pending", "InService")


class MotoVersionError(RuntimeError):
    """The installed moto is not the version the corrections were written against."""


def check_moto_version() -> None:
    if moto.__version__ != PINNED_MOTO_VERSION:
        raise MotoVersionError(
            f"eks_sandbox patches moto internals and is pinned to moto {PINNED_MOTO_VERSION}, but moto "
            f"{moto.__version__} is installed: install moto[server]=={PINNED_MOTO_VERSION} "
            "(test-requirements.txt) or port eks_sandbox/aws/moto_patches.py to the new version")


_applied: set[str] = set()


def _apply_once(correction: Callable[[], None]) -> Callable[[], None]:
    def apply() -> None:
        check_moto_version()
        if correction.__name__ not in _applied:
            correction()
            _applied.add(correction.__name__)
    apply.__name__ = correction.__name__
    apply.__doc__ = correction.__doc__
    return apply


def _arguments(function: Callable[..., Any], args: tuple, kwargs: dict) -> dict[str, Any]:
    """The arguments of a call by parameter name, however moto's callers pass them."""
    bound = inspect.signature(function).bind(*args, **kwargs)
    bound.apply_defaults()
    return dict(bound.arguments)


def note_capacity_change(group: FakeAutoScalingGroup, reason: str, old: int, new: int) -> None:
    """Remember why desired capacity changed: AWS starts the Cause of the resulting launches with it."""
    if old != new:
        group.sandbox_capacity_cause = (
            f"At {aws_time(utcnow())} {reason} changing the desired capacity from {old} to {new}.")


def suspended_process_names(group: FakeAutoScalingGroup) -> list[str]:
    return list(group._suspended_processes)


# ------------------------------------------------------------------------------------------------ (a)

@_apply_once
def correct_az_balance() -> None:
    """(a) Setting desired capacity only records it; CapacityReconciler launches and terminates on its tick,
    spreading launches over the group's AZs and scaling in from the AZ with the most instances."""

    def set_desired_capacity(self: FakeAutoScalingGroup, new_capacity: int | None) -> None:
        self.desired_capacity = self.min_size if new_capacity is None else new_capacity

    original_delete = AutoScalingBackend.delete_auto_scaling_group

    def delete_auto_scaling_group(self: AutoScalingBackend, group_name: str) -> None:
        group = self.autoscaling_groups.get(group_name)
        if group is not None:
            live = [s.instance.id for s in group.instance_states if s.lifecycle_state != "Terminating"]
            if live:
                self.ec2_backend.terminate_instances(live)
            group.instance_states = []
            group.min_size = 0  # moto deletes through set_desired_capacity(0)
        original_delete(self, group_name)

    FakeAutoScalingGroup.set_desired_capacity = set_desired_capacity
    AutoScalingBackend.delete_auto_scaling_group = delete_auto_scaling_group


# ------------------------------------------------------------------------------------------------ (b)

def _check_bounds(min_size: int | None, max_size: int | None, desired: int | None) -> None:
    if min_size is not None and max_size is not None and min_size > max_size:
        raise ValidationError(f"Max bound, {max_size}, must be greater than or equal to min bound, {min_size}")
    if desired is not None and min_size is not None and max_size is not None \
            and not min_size <= desired <= max_size:
        raise ValidationError(f"Desired capacity:{desired} must be between the specified min size:{min_size} "
                              f"and max size:{max_size}")


@_apply_once
def correct_capacity_limits() -> None:
    """(b) CreateAutoScalingGroup, UpdateAutoScalingGroup and SetDesiredCapacity enforce
    MinSize <= DesiredCapacity <= MaxSize with AWS's ValidationError messages; an update that moves a bound
    past the current desired capacity drags desired along, as AWS does."""
    original_create = AutoScalingBackend.create_auto_scaling_group
    original_update = AutoScalingBackend.update_auto_scaling_group
    original_set = AutoScalingBackend.set_desired_capacity

    def create_auto_scaling_group(*args: Any, **kwargs: Any) -> FakeAutoScalingGroup:
        call = _arguments(original_create, args, kwargs)
        min_size, max_size, desired = (None if call[k] is None else int(call[k])
                                       for k in ("min_size", "max_size", "desired_capacity"))
        _check_bounds(min_size, max_size, desired)
        group = original_create(*args, **kwargs)
        note_capacity_change(group, "a user request created an AutoScalingGroup", 0, group.desired_capacity or 0)
        return group

    def update_auto_scaling_group(*args: Any, **kwargs: Any) -> FakeAutoScalingGroup:
        call = _arguments(original_update, args, kwargs)
        backend, name = call["self"], call["name"]
        group = backend.autoscaling_groups.get(name)
        if group is None:
            return original_update(*args, **kwargs)  # moto's not-found error
        min_size = group.min_size if call["min_size"] is None else call["min_size"]
        max_size = group.max_size if call["max_size"] is None else call["max_size"]
        desired = call["desired_capacity"]
        _check_bounds(min_size, max_size, desired)
        if desired is None:
            desired = min(max(group.desired_capacity or 0, min_size), max_size)
        old = group.desired_capacity or 0
        call["desired_capacity"] = desired
        call.pop("self")
        result = original_update(backend, **call)
        note_capacity_change(group, "a user request update of AutoScalingGroup constraints to "
                             f"min: {min_size}, max: {max_size}, desired: {desired}", old, desired)
        return result

    def set_desired_capacity(self: AutoScalingBackend, group_name: str, desired_capacity: int | None) -> None:
        group = self.autoscaling_groups.get(group_name)
        if group is not None and desired_capacity is not None:
            if group.max_size is not None and desired_capacity > group.max_size:
                raise ValidationError(f"New SetDesiredCapacity value {desired_capacity} is above max value "
                                      f"{group.max_size} for the AutoScalingGroup.")
            if group.min_size is not None and desired_capacity < group.min_size:
                raise ValidationError(f"New SetDesiredCapacity value {desired_capacity} is below min value "
                                      f"{group.min_size} for the AutoScalingGroup.")
            note_capacity_change(group, "a user request explicitly set group desired capacity",
                                 group.desired_capacity or 0, desired_capacity)
        original_set(self, group_name, desired_capacity)

    AutoScalingBackend.create_auto_scaling_group = create_auto_scaling_group
    AutoScalingBackend.update_auto_scaling_group = update_auto_scaling_group
    AutoScalingBackend.set_desired_capacity = set_desired_capacity


# ------------------------------------------------------------------------------------------------ (c)

@_apply_once
def correct_source_version() -> None:
    """(c) CreateLaunchTemplateVersion with SourceVersion starts from the source version's data, overlaid
    (per top-level parameter) by the LaunchTemplateData given; UserData is kept in moto's encoded form."""

    def create_launch_template_version(self: LaunchTemplates) -> ActionResult:
        name = self._get_param("LaunchTemplateName")
        template_id = self._get_param("LaunchTemplateId")
        if template_id:
            template = self.ec2_backend.get_launch_template(template_id)
        else:
            template = self.ec2_backend.get_launch_template_by_name(name)
        data = self._get_param("LaunchTemplateData", {})
        if "UserData" in data:
            data["UserData"] = parse_user_data(data["UserData"])
        source_version = self._get_param("SourceVersion")
        if source_version is not None:
            data = {**copy.deepcopy(template.get_version(source_version).data), **data}
        self.error_on_dryrun()
        version = template.create_version(data, self._get_param("VersionDescription"))
        return ActionResult({"LaunchTemplateVersion": {
            "CreateTime": version.create_time,
            "CreatedBy": f"arn:{self.partition}:iam::{self.current_account}:root",
            "DefaultVersion": template.is_default(version),
            "LaunchTemplateData": version.data,
            "LaunchTemplateId": template.id,
            "LaunchTemplateName": template.name,
            "VersionDescription": version.description,
            "VersionNumber": version.number,
        }})

    LaunchTemplates.create_launch_template_version = create_launch_template_version


# ------------------------------------------------------------------------------------------------ (d)

@_apply_once
def correct_instance_launch_template() -> None:
    """(d) Instances[].LaunchTemplate.Version (DescribeAutoScalingGroups, DescribeAutoScalingInstances) is the
    version the instance was launched from, recorded at launch by CapacityReconciler."""
    original = InstanceState.launch_template

    def launch_template(self: InstanceState) -> dict[str, Any] | None:
        launched_from = getattr(self.instance, "sandbox_launch_template", None)
        if launched_from is None:
            return original.fget(self)
        template, version = launched_from
        return {"LaunchTemplateId": template.id, "LaunchTemplateName": template.name, "Version": str(version)}

    InstanceState.launch_template = property(launch_template)


# ------------------------------------------------------------------------------------------------ (e)

@_apply_once
def correct_suspended_processes() -> None:
    """(e) Suspended processes keep their order and an AWS-style SuspensionReason; unknown process names are
    refused. CapacityReconciler honours Launch and Terminate; AZRebalance, ReplaceUnhealthy,
    AlarmNotification, ScheduledActions and the rest are recorded only (the sandbox never rebalances AZs,
    runs alarms or scheduled actions, so suspending them changes nothing)."""

    def reasons(group: FakeAutoScalingGroup) -> dict[str, str]:
        if not hasattr(group, "sandbox_suspension_reasons"):
            group.sandbox_suspension_reasons = {}
        return group.sandbox_suspension_reasons

    def validated(names: list[str]) -> list[str]:
        for name in names:
            if name not in SCALING_PROCESSES:
                raise ValidationError(f"Unknown scaling process {name}; valid processes are "
                                      f"{', '.join(SCALING_PROCESSES)}")
        return names

    def suspend_processes(self: AutoScalingBackend, group_name: str, scaling_processes: list[str]) -> None:
        group = self.autoscaling_groups[group_name]
        names = validated(list(scaling_processes or SCALING_PROCESSES))
        current = suspended_process_names(group)
        for name in names:
            if name not in current:
                current.append(name)
                reasons(group)[name] = f"User suspended at {aws_time(utcnow())}"
        group._suspended_processes = current

    def resume_processes(self: AutoScalingBackend, group_name: str, scaling_processes: list[str]) -> None:
        group = self.autoscaling_groups[group_name]
        names = validated(list(scaling_processes or SCALING_PROCESSES))
        group._suspended_processes = [p for p in suspended_process_names(group) if p not in names]
        for name in names:
            reasons(group).pop(name, None)

    def suspended_processes(self: FakeAutoScalingGroup) -> list[dict[str, str]]:
        return [{"ProcessName": name, "SuspensionReason": reasons(self).get(name, "")}
                for name in self._suspended_processes]

    def set_suspended_processes(self: FakeAutoScalingGroup, processes: list[str]) -> None:
        self._suspended_processes = list(processes)

    AutoScalingBackend.suspend_processes = suspend_processes
    AutoScalingBackend.resume_processes = resume_processes
    FakeAutoScalingGroup.suspended_processes = property(suspended_processes, set_suspended_processes)


# ------------------------------------------------------------------------------------------------ (f)

@_apply_once
def correct_scaling_activities() -> None:
    """(f) DescribeScalingActivities returns the recorded activities, newest first, filtered by group and
    ActivityIds, paged with MaxRecords/NextToken."""

    def describe_scaling_activities(self: AutoScalingResponse) -> ActionResult:
        backend = self.autoscaling_backend
        group_name = self._get_param("AutoScalingGroupName")
        groups = [backend.autoscaling_groups[group_name]] if group_name in backend.autoscaling_groups else (
            [] if group_name else list(backend.autoscaling_groups.values()))
        activities = [a for g in groups for a in group_activities(g)]
        wanted = set(self._get_param("ActivityIds", []))
        if wanted:
            activities = [a for a in activities if a.activity_id in wanted]
        activities.sort(key=lambda a: a.start_time, reverse=True)
        start = int(self._get_param("NextToken") or 0)
        max_records = self._get_int_param("MaxRecords") or 100
        page = activities[start:start + max_records]
        next_token = str(start + max_records) if len(activities) > start + max_records else None
        return ActionResult({"Activities": page, "NextToken": next_token})

    AutoScalingResponse.describe_scaling_activities = describe_scaling_activities


# ------------------------------------------------------------------------------------------------ (g)

SHUTTING_DOWN = ("shutting-down", 32)


@_apply_once
def correct_instance_timing() -> None:
    """(g) TerminateInstances puts instances in shutting-down (CapacityReconciler finishes them after
    timings.instance_shutdown_seconds); an ASG instance terminated through EC2 is taken out of service and
    replaced; TerminateInstanceInAutoScalingGroup decrements or replaces as AWS does and refuses to go below
    MinSize when asked to decrement."""

    def terminate_instances(self: InstanceBackend, instance_ids: list[str]) -> list[tuple[Any, Any]]:
        if not instance_ids:
            raise InvalidParameterCombination("No instances specified")
        instances = self.get_multi_instances_by_id(instance_ids)
        for instance in instances:
            if instance.disable_api_termination is True:
                raise OperationNotPermitted4(instance.id)
        terminating = []
        for instance in instances:
            previous_state = copy.copy(instance._state)
            if instance._state.name not in ("shutting-down", "terminated"):
                instance._state = Ec2InstanceState(*SHUTTING_DOWN)
                instance.sandbox_state_since = time.monotonic()
            terminating.append((instance, previous_state))
        return terminating

    def notify_terminate_instances(self: AutoScalingBackend, instance_ids: list[str]) -> None:
        for group in self.autoscaling_groups.values():
            for state in group.instance_states:
                if state.instance.id not in instance_ids:
                    continue
                lifecycle.stop_waiting(state)  # EC2 terminates it: no hook holds it any more
                if not state.lifecycle_state.startswith("Terminating"):
                    state.lifecycle_state, state.health_status = "Terminating", "Unhealthy"
                    state.instance.sandbox_activity = record_activity(
                        group, f"Terminating EC2 instance: {state.instance.id}",
                        f"At {aws_time(utcnow())} an instance was taken out of service in response to an EC2 "
                        "health check indicating it has been terminated or stopped.")

    def terminate_instance(self: AutoScalingBackend, instance_id: str, should_decrement: bool) -> Any:
        state = next((s for g in self.autoscaling_groups.values() for s in g.instance_states
                      if s.instance.id == instance_id), None)
        if state is None:
            raise ValidationError(f"Instance Id not found - No managed instance found for instance ID: "
                                  f"{instance_id}")
        group = state.auto_scaling_group
        if state.lifecycle_state == lifecycle.RETAINED:
            # (l) RetentionTriggers: retained instances "remain until you call TerminateInstanceInAutoScalingGroup":
            # a new termination (through the group's hooks again). The instance is not part of the desired
            # capacity, so there is nothing to decrement (the sandbox refuses it; AWS's guide is silent).
            if should_decrement:
                raise ValidationError(f"Instance {instance_id} is in Terminating:Retained and does not count toward "
                                      "the group's desired capacity: set ShouldDecrementDesiredCapacity to false")
            activity = record_activity(group, f"Terminating EC2 instance: {instance_id}",
                                       f"At {aws_time(utcnow())} instance {instance_id} was taken out of service in "
                                       "response to a user request.")
            state.instance.sandbox_activity = activity
            lifecycle.begin_termination(state)
            return activity
        if state.lifecycle_state.startswith("Terminating"):
            return state.instance.sandbox_activity
        original = group.desired_capacity or 0
        if should_decrement:
            if original <= (group.min_size or 0):
                raise ValidationError(
                    f"Currently, desiredSize equals minSize ({group.min_size}). Terminating instance without "
                    "replacement will violate group's min size constraint. Either set "
                    "shouldDecrementDesiredCapacity flag to false or lower group's min size.")
            group.desired_capacity = original - 1
        cause = f"At {aws_time(utcnow())} instance {instance_id} was taken out of service in response to a user request"
        cause += f", shrinking the capacity from {original} to {original - 1}." if should_decrement else "."
        activity = record_activity(group, f"Terminating EC2 instance: {instance_id}", cause)
        state.instance.sandbox_activity = activity
        lifecycle.begin_termination(state)  # (h): Terminating:Wait while the group has termination hooks
        return activity

    InstanceBackend.terminate_instances = terminate_instances
    AutoScalingBackend.notify_terminate_instances = notify_terminate_instances
    AutoScalingBackend.terminate_instance = terminate_instance


# ------------------------------------------------------------------------------------------------ (h)

@_apply_once
def correct_lifecycle_hooks() -> None:
    """(h) PutLifecycleHook validates its parameters as AWS documents them, keeps on an update what is not given,
    stores RoleARN/NotificationTargetARN/NotificationMetadata as given (moto reports made-up ARNs) and reports
    GlobalTimeout as min(48 h, 100 x HeartbeatTimeout) (moto: always 48 h); CompleteLifecycleAction and
    RecordLifecycleActionHeartbeat act on the lifecycle actions of lifecycle.py (moto: not implemented)."""

    def put_lifecycle_hook(self: AutoScalingResponse) -> EmptyResult:
        backend = self.autoscaling_backend
        name, group_name = self._get_param("LifecycleHookName"), self._get_param("AutoScalingGroupName")
        existing = backend.lifecycle_hooks.get(f"{group_name}_{name}")
        transition = self._get_param("LifecycleTransition")
        timeout = self._get_int_param("HeartbeatTimeout")
        result = self._get_param("DefaultResult")
        lifecycle.validate_hook(transition, timeout, result)
        if existing is None and transition is None:
            raise ValidationError("LifecycleTransition is required for a new lifecycle hook")
        hook = backend.create_lifecycle_hook(
            name=name, as_name=group_name,
            transition=transition or existing.lifecycle_transition,
            timeout=timeout or (existing.heartbeat_timeout if existing else lifecycle.HEARTBEAT_DEFAULT),
            result=result or (existing.default_result if existing else "ABANDON"))
        for attribute, parameter in (("role_arn", "RoleARN"), ("notification_target_arn", "NotificationTargetARN"),
                                     ("notification_metadata", "NotificationMetadata")):
            given = self._get_param(parameter)
            setattr(hook, attribute, given if given is not None else getattr(existing, attribute, None))
        hook.global_timeout = lifecycle.global_timeout(hook.heartbeat_timeout)
        return EmptyResult()

    def complete_lifecycle_action(self: AutoScalingResponse) -> EmptyResult:
        lifecycle.complete_lifecycle_action(
            self.autoscaling_backend, self._get_param("AutoScalingGroupName"), self._get_param("LifecycleHookName"),
            self._get_param("LifecycleActionResult"), token=self._get_param("LifecycleActionToken"),
            instance_id=self._get_param("InstanceId"))
        return EmptyResult()

    def record_lifecycle_action_heartbeat(self: AutoScalingResponse) -> EmptyResult:
        lifecycle.record_lifecycle_action_heartbeat(
            self.autoscaling_backend, self._get_param("AutoScalingGroupName"), self._get_param("LifecycleHookName"),
            token=self._get_param("LifecycleActionToken"), instance_id=self._get_param("InstanceId"))
        return EmptyResult()

    AutoScalingResponse.put_lifecycle_hook = put_lifecycle_hook
    AutoScalingResponse.complete_lifecycle_action = complete_lifecycle_action
    AutoScalingResponse.record_lifecycle_action_heartbeat = record_lifecycle_action_heartbeat


# ------------------------------------------------------------------------------------------------ (l)

@_apply_once
def correct_instance_lifecycle_policy() -> None:
    """(l) Instance lifecycle policies (User Guide, "Control instance retention with instance lifecycle policies";
    API reference CreateAutoScalingGroup, UpdateAutoScalingGroup, AutoScalingGroup, InstanceLifecyclePolicy,
    RetentionTriggers). moto 5.2.5 drops the InstanceLifecyclePolicy parameter of CreateAutoScalingGroup and
    UpdateAutoScalingGroup; here it is validated (TerminateHookAbandon retain | terminate), kept on the group as
    given (an update without it keeps the group's), and DescribeAutoScalingGroups reports it (moto's serializer
    reads the group's ``instance_lifecycle_policy``). What it does to an abandoned termination is lifecycle.py's."""

    def with_policy(original: Callable[[AutoScalingResponse], ActionResult]) \
            -> Callable[[AutoScalingResponse], ActionResult]:
        """`original` (CreateAutoScalingGroup or UpdateAutoScalingGroup), with the InstanceLifecyclePolicy given to
        it validated first and kept on the group afterwards (not given: the group keeps what it has)."""

        def call(self: AutoScalingResponse) -> ActionResult:
            policy = self._get_param("InstanceLifecyclePolicy")
            if policy is not None:
                lifecycle.validate_instance_lifecycle_policy(policy)
            result = original(self)
            if policy is not None:
                self.autoscaling_backend.autoscaling_groups[self._get_param("AutoScalingGroupName")] \
                    .instance_lifecycle_policy = copy.deepcopy(policy)
            return result

        call.__name__ = original.__name__
        return call

    AutoScalingResponse.create_auto_scaling_group = with_policy(AutoScalingResponse.create_auto_scaling_group)
    AutoScalingResponse.update_auto_scaling_group = with_policy(AutoScalingResponse.update_auto_scaling_group)


# ------------------------------------------------------------------------------------------------ (m)

@_apply_once
def correct_instance_refresh() -> None:
    """(m) Instance refreshes (instance_refresh.py: the API's statuses and errors, and the rolling replacement the
    controller loop runs). RefreshPreferences' percentages are validated as the API reference states their ranges
    (MinHealthyPercentage 0-100, MaxHealthyPercentage 100-200, at most 100 apart)."""

    def group_of(self: AutoScalingResponse) -> FakeAutoScalingGroup:
        name = self._get_param("AutoScalingGroupName")
        group = self.autoscaling_backend.autoscaling_groups.get(name)
        if group is None:
            raise ValidationError(f"AutoScalingGroup name not found - AutoScalingGroup {name} not found")
        return group

    def start_instance_refresh(self: AutoScalingResponse) -> ActionResult:
        group = group_of(self)
        preferences = self._get_param("Preferences") or {}
        low = preferences.get("MinHealthyPercentage")
        high = preferences.get("MaxHealthyPercentage")
        if low is not None and not 0 <= int(low) <= 100:
            raise ValidationError("MinHealthyPercentage must be between 0 and 100")
        if high is not None and (not 100 <= int(high) <= 200 or int(high) - int(low or 90) > 100):
            raise ValidationError("MaxHealthyPercentage must be between 100 and 200, at most 100 above "
                                  "MinHealthyPercentage")
        refresh_id = instance_refresh.start_instance_refresh(
            group, self._get_param("Strategy"), preferences, self._get_param("DesiredConfiguration"))
        return ActionResult({"InstanceRefreshId": refresh_id})

    def describe_instance_refreshes(self: AutoScalingResponse) -> ActionResult:
        refreshes = instance_refresh.describe_instance_refreshes(group_of(self),
                                                                 self._get_param("InstanceRefreshIds", []))
        start = int(self._get_param("NextToken") or 0)
        max_records = self._get_int_param("MaxRecords") or 50
        page = refreshes[start:start + max_records]
        next_token = str(start + max_records) if len(refreshes) > start + max_records else None
        return ActionResult({"InstanceRefreshes": page, "NextToken": next_token})

    def cancel_instance_refresh(self: AutoScalingResponse) -> ActionResult:
        return ActionResult({"InstanceRefreshId": instance_refresh.cancel_instance_refresh(group_of(self))})

    AutoScalingResponse.start_instance_refresh = start_instance_refresh
    AutoScalingResponse.describe_instance_refreshes = describe_instance_refreshes
    AutoScalingResponse.cancel_instance_refresh = cancel_instance_refresh


# ------------------------------------------------------------------------------------------------ (n)

ASG_TAG_LIMIT = 50
TAGS_PER_CALL = 25


@_apply_once
def correct_tag_limits() -> None:
    """(n) Auto Scaling user guide, "Tag Auto Scaling groups and instances": "The maximum number of tags per resource
    is 50. The maximum number of tags that you can add or remove using a single call is 25." CreateOrUpdateTags past
    either limit changes nothing: LimitExceeded (botocore's model lists it for CreateOrUpdateTags; the message is the
    sandbox's own, AWS documents none) or a ValidationError for a call with more than 25."""
    create_or_update_tags = AutoScalingBackend.create_or_update_tags
    delete_tags = AutoScalingBackend.delete_tags

    def checked_create(self: AutoScalingBackend, tags: list[dict[str, str]]) -> None:
        if len(tags) > TAGS_PER_CALL:
            raise ValidationError(f"At most {TAGS_PER_CALL} tags can be added or updated in one call; got {len(tags)}")
        keys: dict[str, set[str]] = {}
        for tag in tags:
            group = self.autoscaling_groups.get(tag["ResourceId"])
            if group is not None:
                keys.setdefault(group.name, {t["Key"] for t in group.tags}).add(tag["Key"])
        for name, names in keys.items():
            if len(names) > ASG_TAG_LIMIT:
                raise AutoscalingClientError(
                    "LimitExceeded", f"The number of tags on Auto Scaling group {name} would be {len(names)}, "
                    f"more than the limit of {ASG_TAG_LIMIT}")
        create_or_update_tags(self, tags)

    def checked_delete(self: AutoScalingBackend, tags: list[dict[str, str]]) -> None:
        if len(tags) > TAGS_PER_CALL:
            raise ValidationError(f"At most {TAGS_PER_CALL} tags can be deleted in one call; got {len(tags)}")
        delete_tags(self, tags)

    AutoScalingBackend.create_or_update_tags = checked_create
    AutoScalingBackend.delete_tags = checked_delete


# ------------------------------------------------------------------------------------------------ (o)

@_apply_once
def correct_replacement_settings() -> None:
    """(o) MaxInstanceLifetime ("either 0 or a number equal to or greater than 86,400 seconds"; 0 clears it, API
    reference UpdateAutoScalingGroup) and CapacityRebalance are kept as given and reported. What they do (replace an
    instance at the end of its lifetime, launch a Spot replacement on a rebalance recommendation) is not modelled:
    the collection refuses a group that has either, before any change."""

    def keeping(original: Callable[[AutoScalingResponse], ActionResult]) -> Callable[[AutoScalingResponse], ActionResult]:
        def call(self: AutoScalingResponse) -> ActionResult:
            lifetime = self._get_int_param("MaxInstanceLifetime")
            if lifetime is not None and lifetime != 0 and lifetime < 86400:
                raise ValidationError("MaxInstanceLifetime must be 0 or at least 86400 seconds")
            rebalance = self._get_param("CapacityRebalance")
            result = original(self)
            group = self.autoscaling_backend.autoscaling_groups[self._get_param("AutoScalingGroupName")]
            if lifetime is not None:
                group.max_instance_lifetime = lifetime or None
            if rebalance is not None:
                group.capacity_rebalance = str(rebalance).lower() == "true"
            return result

        call.__name__ = original.__name__
        return call

    AutoScalingResponse.create_auto_scaling_group = keeping(AutoScalingResponse.create_auto_scaling_group)
    AutoScalingResponse.update_auto_scaling_group = keeping(AutoScalingResponse.update_auto_scaling_group)


# ------------------------------------------------------------------------------------------------ (p)

# EC2 User Guide, "Use a Systems Manager parameter instead of an AMI ID": a launch template's ImageId may be
# resolve:ssm:parameter-name, resolve:ssm:parameter-name:version-number or resolve:ssm:parameter-name:label, "resolved
# to an AMI ID when the instance is launched" (so a parameter changed later changes what the next launch runs).
SSM_IMAGE_PREFIX = "resolve:ssm:"


def resolve_image_id(account_id: str, region: str, image_id: str) -> str | None:
    """``image_id`` as EC2 resolves it now: the value of a ``resolve:ssm:`` parameter (None when the parameter, its
    version or its label does not exist), any other ImageId as it is."""
    if not image_id.startswith(SSM_IMAGE_PREFIX):
        return image_id
    try:
        parameter = ssm_backends[account_id][region].get_parameter(image_id[len(SSM_IMAGE_PREFIX):])
    except ParameterVersionNotFound:
        return None
    return parameter.value if parameter is not None else None


@_apply_once
def correct_resolve_alias() -> None:
    """(q) DescribeLaunchTemplateVersions with ResolveAlias true answers an ImageId given as an SSM parameter with the
    AMI id it resolves to (API reference, DescribeLaunchTemplateVersions: "If true, and if a Systems Manager parameter
    is specified for ImageId, the AMI ID is displayed in the response for imageId"). What AWS answers for a parameter
    that no longer exists is not documented: the ImageId is then left as it is."""
    original = LaunchTemplates.describe_launch_template_versions

    def describe_launch_template_versions(self: LaunchTemplates) -> ActionResult:
        answer = original(self)
        if str(self._get_param("ResolveAlias", "false")).lower() != "true":
            return answer
        versions = []
        for version in answer.result["LaunchTemplateVersions"]:
            data = dict(version["LaunchTemplateData"])
            resolved = resolve_image_id(self.current_account, self.region, data.get("ImageId", ""))
            if resolved:
                data["ImageId"] = resolved
            versions.append(dict(version, LaunchTemplateData=data))
        return ActionResult({"LaunchTemplateVersions": versions})

    LaunchTemplates.describe_launch_template_versions = describe_launch_template_versions


# ------------------------------------------------------------------------------------------------ (i)

def instance_visible(instance: Any, now: float | None = None) -> bool:
    """Whether DescribeInstances knows the instance yet (`sandbox_visible_at`, set at launch by the
    `instance_not_visible` fault; absent: at once)."""
    visible_at = getattr(instance, "sandbox_visible_at", None)
    return visible_at is None or (time.monotonic() if now is None else now) >= visible_at


@_apply_once
def correct_describe_instances_consistency() -> None:
    """(i) EC2's API is eventually consistent ("Eventual consistency in the Amazon EC2 API", EC2 API reference;
    the error codes page: InvalidInstanceID.NotFound "The specified instance does not exist ... This error may
    occur because the ID of a recently created instance has not propagated through the system"): DescribeInstances
    naming an instance that is not visible yet answers InvalidInstanceID.NotFound with EC2's message (the whole
    call fails, as for any unknown id), and a listing without ids leaves it out. Only DescribeInstances is
    affected; moto's other EC2 and Auto Scaling calls see the instance at once."""
    original = InstanceResponse.describe_instances

    def describe_instances(self: InstanceResponse) -> ActionResult:
        requested = self._get_param("InstanceIds", [])
        now = time.monotonic()
        if requested:
            known = {i.id: i for r in self.ec2_backend.all_reservations() for i in r.instances}
            unknown = [i for i in requested if i not in known or not instance_visible(known[i], now)]
            if unknown:
                raise InvalidInstanceIdError(unknown)
            return original(self)
        result = original(self)
        for reservation in result.result["Reservations"]:
            reservation.instances = [i for i in reservation.instances if instance_visible(i, now)]
        result.result["Reservations"] = [r for r in result.result["Reservations"] if r.instances]
        return result

    InstanceResponse.describe_instances = describe_instances


# ------------------------------------------------------------------------------------------------ (j)

def _registration_times(owner: Any) -> dict[str, float]:
    if not hasattr(owner, "sandbox_registered_at"):
        owner.sandbox_registered_at = {}
    return owner.sandbox_registered_at


def _draining(owner: Any) -> dict[str, tuple[float, float]]:
    if not hasattr(owner, "sandbox_draining"):
        owner.sandbox_draining = {}
    return owner.sandbox_draining


def registered_at(owner: Any, target_id: str) -> float | None:
    """When (time.monotonic) a target group target or a Classic ELB instance was last registered (None: unknown)."""
    return _registration_times(owner).get(target_id)


def draining_targets(target_group: FakeTargetGroup, now: float | None = None) -> dict[str, tuple[float, float]]:
    """The targets of a target group that are draining now: {id: (deregistered at, draining until)}, in
    time.monotonic seconds. Targets whose delay has passed are dropped (they are gone)."""
    now = time.monotonic() if now is None else now
    draining = _draining(target_group)
    for target_id in [t for t, (dummy, until) in draining.items() if until <= now]:
        del draining[target_id]
    return dict(draining)


def _deregistration_delay(target_group: FakeTargetGroup) -> float:
    return float(target_group.attributes.get("deregistration_delay.timeout_seconds", 300))


@_apply_once
def correct_target_deregistration_delay() -> None:
    """(j) ELBv2 deregistration delay. Application Load Balancers user guide, "Target groups" > "Deregistration
    delay": "The initial state of a deregistering target is draining. After the deregistration delay elapses, the
    deregistration process completes and the state of the target is unused" ("even though target deregistration is
    complete, the status of the target is displayed as draining until the deregistration delay timeout expires");
    API reference TargetHealth: state draining has reason Target.DeregistrationInProgress, and "Target.InvalidState
    - The target is in the stopped or terminated state" (state unused).

    DeregisterTargets moves a target to `draining` for the group's deregistration_delay.timeout_seconds (real
    seconds, on time.monotonic, the clock of every other sandbox timer); DescribeTargetHealth lists draining
    targets (moto lists registered ones only) as `draining` / Target.DeregistrationInProgress until the delay has
    passed, then they are gone (asked for by id: moto's `unused` / Target.NotRegistered). RegisterTargets of a
    draining target ends its draining. A registered instance that is shutting down or terminated is `unused` /
    Target.InvalidState (moto: healthy). moto's own reaction to TerminateInstances (the target turns `draining`
    for ever) is dropped: a terminated instance stays registered, and reported as such, until its owner
    deregisters it (the sandbox's load balancer controllers do)."""
    original_register = FakeTargetGroup.register
    original_deregister = FakeTargetGroup.deregister
    original_health_for = FakeTargetGroup.health_for

    def register(self: FakeTargetGroup, targets: list[dict[str, Any]]) -> None:
        original_register(self, targets)
        now = time.monotonic()
        for target in targets:
            _draining(self).pop(target["Id"], None)
            _registration_times(self)[target["Id"]] = now

    def deregister(self: FakeTargetGroup, targets: list[dict[str, Any]]) -> None:
        known = {target["Id"]: self.targets.get(target["Id"]) for target in targets}
        original_deregister(self, targets)  # moto's InvalidTargetError for a target it does not know
        now = time.monotonic()
        delay = _deregistration_delay(self)
        for target_id, target in known.items():
            if target is not None and delay > 0:
                _draining(self)[target_id] = (now, now + delay)

    def deregister_terminated_instances(self: FakeTargetGroup, instance_ids: list[str]) -> None:
        return None

    def health_for(self: FakeTargetGroup, target: dict[str, Any], ec2_backend: Any) -> FakeHealthStatus:
        target_id = target["Id"]
        if target_id not in self.targets and target_id in draining_targets(self):
            port = target.get("Port", self.deregistered_targets.get(target_id, {}).get("Port", self.port))
            return FakeHealthStatus(target_id, port, self.health_check_port, "draining",
                                    "Target.DeregistrationInProgress", "Target deregistration is in progress")
        if target_id in self.targets and target_id.startswith("i-"):
            instance = ec2_backend.get_instance_by_id(target_id)
            if instance is not None and instance.state in ("shutting-down", "terminated"):
                return FakeHealthStatus(target_id, self.targets[target_id]["Port"], self.health_check_port,
                                        "unused", "Target.InvalidState", "Target is in the terminated state")
        return original_health_for(self, target, ec2_backend)

    def describe_target_health(self: ELBv2Backend, target_group_arn: str,
                               targets: list[dict[str, Any]]) -> list[FakeHealthStatus]:
        target_group = self.target_groups.get(target_group_arn)
        if target_group is not None and not targets:
            targets = list(target_group.targets.values()) + [
                {"Id": target_id, **({"Port": target_group.deregistered_targets[target_id]["Port"]}
                                     if target_id in target_group.deregistered_targets else {})}
                for target_id in draining_targets(target_group) if target_id not in target_group.targets]
            if not targets:
                return []
        return original_describe_target_health(self, target_group_arn, targets)

    original_describe_target_health = ELBv2Backend.describe_target_health
    FakeTargetGroup.register = register
    FakeTargetGroup.deregister = deregister
    FakeTargetGroup.deregister_terminated_instances = deregister_terminated_instances
    FakeTargetGroup.health_for = health_for
    ELBv2Backend.describe_target_health = describe_target_health


# ------------------------------------------------------------------------------------------------ (k)

def classic_draining_timeout(load_balancer: ClassicLoadBalancer) -> float | None:
    """The connection draining timeout of a Classic ELB (None: draining disabled). moto keeps the attribute as
    given: lower-case keys from its defaults, the API's member names from ModifyLoadBalancerAttributes."""
    setting = load_balancer.attributes.get("connection_draining") or {}
    enabled = setting.get("Enabled", setting.get("enabled", False))
    if str(enabled).lower() != "true":
        return None
    return float(setting.get("Timeout", setting.get("timeout", 300)))


def classic_draining_instances(load_balancer: ClassicLoadBalancer,
                               now: float | None = None) -> dict[str, tuple[float, float]]:
    """The instances a Classic ELB is draining now: {id: (deregistered at, draining until)} (time.monotonic)."""
    now = time.monotonic() if now is None else now
    draining = _draining(load_balancer)
    for instance_id in [i for i, (dummy, until) in draining.items() if until <= now]:
        del draining[instance_id]
    return dict(draining)


_EC2_STATE_DESCRIPTIONS = {"pending": "Instance is in pending state.", "stopped": "Instance is in stopped state.",
                           "stopping": "Instance is in stopped state.",
                           "shutting-down": "Instance is in terminated state.",
                           "terminated": "Instance is in terminated state."}


@_apply_once
def correct_classic_connection_draining() -> None:
    """(k) Classic ELB connection draining. Classic Load Balancers user guide, "Configure connection draining for
    your Classic Load Balancer": "If a deregistering instance has no in-flight requests ... While in-flight requests
    are being served, the load balancer reports the state of a deregistering instance as InService: Instance
    deregistration currently in progress"; the timeout is 1-3600 s. API reference InstanceState: State InService |
    OutOfService | Unknown, ReasonCode ELB | Instance | N/A, and the Description values quoted below.

    DeregisterInstancesFromLoadBalancer on a load balancer with ConnectionDraining enabled keeps each instance in
    DescribeInstanceHealth as InService / "Instance deregistration currently in progress." for the timeout (real
    seconds, time.monotonic); a listing without instances includes it. A registered instance that is not running
    is OutOfService / ReasonCode Instance / "Instance is in terminated state." (pending, stopped likewise); moto
    answers "N/A" for every description. An instance asked for by id that is not registered is OutOfService,
    "Instance is not currently registered with the LoadBalancer." (the draining guide's state after draining; moto
    says Unknown): API reference DescribeInstanceHealth, "If instances are specified, their state is returned even if
    they are no longer registered with the load balancer". Not modelled: "The state of terminated instances is not
    returned" (a terminated, deregistered instance is answered as not registered)."""

    original_register = ELBBackend.register_instances
    original_deregister = ELBBackend.deregister_instances

    def register_instances(self: ELBBackend, load_balancer_name: str, instance_ids: Any,
                           from_autoscaling: bool = False) -> ClassicLoadBalancer:
        instance_ids = list(instance_ids)
        load_balancer = original_register(self, load_balancer_name, instance_ids, from_autoscaling)
        now = time.monotonic()
        for instance_id in instance_ids:
            _draining(load_balancer).pop(instance_id, None)
            _registration_times(load_balancer)[instance_id] = now
        return load_balancer

    def deregister_instances(self: ELBBackend, load_balancer_name: str, instance_ids: Any,
                             from_autoscaling: bool = False) -> ClassicLoadBalancer:
        instance_ids = list(instance_ids)
        before = set(self.get_load_balancer(load_balancer_name).instance_ids)
        load_balancer = original_deregister(self, load_balancer_name, instance_ids, from_autoscaling)
        timeout = classic_draining_timeout(load_balancer)
        now = time.monotonic()
        for instance_id in instance_ids:
            if timeout and instance_id in before and instance_id not in load_balancer.instance_ids:
                _draining(load_balancer)[instance_id] = (now, now + timeout)
        return load_balancer

    def describe_instance_health(self: ELBResponse) -> ActionResult:
        load_balancer = self.elb_backend.get_load_balancer(self._get_param("LoadBalancerName"))
        asked = [i["InstanceId"] for i in self._get_param("Instances", [])]
        if load_balancer is None:  # moto's LoadBalancerNotFound
            self.elb_backend.describe_instance_health(self._get_param("LoadBalancerName"), [])
        draining = classic_draining_instances(load_balancer)
        registered = load_balancer.instance_ids
        ids = asked or list(registered) + [i for i in draining if i not in registered]
        states = []
        for instance_id in ids:
            if instance_id in registered:
                states.append(_classic_instance_state(self, instance_id))
            elif instance_id in draining:
                states.append({"InstanceId": instance_id, "State": "InService", "ReasonCode": "N/A",
                               "Description": "Instance deregistration currently in progress."})
            else:
                states.append({"InstanceId": instance_id, "State": "OutOfService", "ReasonCode": "ELB",
                               "Description": "Instance is not currently registered with the LoadBalancer."})
        return ActionResult({"InstanceStates": states})

    ELBBackend.register_instances = register_instances
    ELBBackend.deregister_instances = deregister_instances
    ELBResponse.describe_instance_health = describe_instance_health


def _classic_instance_state(response: ELBResponse, instance_id: str) -> dict[str, str]:
    from moto.ec2.models import ec2_backends

    instance = ec2_backends[response.current_account][response.region].get_instance_by_id(instance_id)
    state = instance.state if instance is not None else "terminated"
    if state == "running":
        return {"InstanceId": instance_id, "State": "InService", "ReasonCode": "N/A", "Description": "N/A"}
    return {"InstanceId": instance_id, "State": "OutOfService", "ReasonCode": "Instance",
            "Description": _EC2_STATE_DESCRIPTIONS.get(state, "Instance is in stopped state.")}


# ------------------------------------------------------------------------------------------------ (r)

@_apply_once
def correct_alarm_creation_state() -> None:
    """(r) CloudWatch API reference, PutMetricAlarm: "When this operation creates an alarm, the alarm state is
    immediately set to INSUFFICIENT_DATA. [...] When you update an existing alarm, its state is left unchanged, but
    the update completely overwrites the previous configuration of the alarm." (issue 27 item 2: the alarms a run
    watches)."""
    put_metric_alarm = CloudWatchBackend.put_metric_alarm

    def created_insufficient_data(self: CloudWatchBackend, name: str, *args: Any, **kwargs: Any) -> Any:
        previous = self.alarms.get(name)
        alarm = put_metric_alarm(self, name, *args, **kwargs)
        if previous is None:
            alarm.state_value = "INSUFFICIENT_DATA"
        else:
            for field in ("state_value", "state_reason", "state_reason_data", "state_updated_timestamp", "history"):
                setattr(alarm, field, getattr(previous, field))
        return alarm

    CloudWatchBackend.put_metric_alarm = created_insufficient_data


CORRECTIONS = (correct_az_balance, correct_capacity_limits, correct_source_version,
               correct_instance_launch_template, correct_suspended_processes, correct_scaling_activities,
               correct_instance_timing, correct_lifecycle_hooks, correct_describe_instances_consistency,
               correct_target_deregistration_delay, correct_classic_connection_draining,
               correct_instance_lifecycle_policy, correct_instance_refresh, correct_tag_limits,
               correct_replacement_settings, _apply_once(correct_mixed_instances), correct_resolve_alias,
               correct_alarm_creation_state)


def apply_moto_corrections() -> None:
    """Apply every correction (idempotent); raises MotoVersionError on any moto but the pinned one."""
    check_moto_version()
    for correction in CORRECTIONS:
        correction()
