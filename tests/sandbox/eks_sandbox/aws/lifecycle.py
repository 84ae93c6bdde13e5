# -*- coding: utf-8 -*-
# Copyright: Contributors to the eksops.nodegroup project
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Termination lifecycle hooks, which moto 5.2.5 stores (PutLifecycleHook, DescribeLifecycleHooks) but never runs,
and whose CompleteLifecycleAction and RecordLifecycleActionHeartbeat it does not implement.

Modelled on the Amazon EC2 Auto Scaling User Guide, "Amazon EC2 Auto Scaling lifecycle hooks"
(https://docs.aws.amazon.com/autoscaling/ec2/userguide/lifecycle-hooks.html: "How lifecycle hooks work",
"Keeping instances in a wait state", "Add lifecycle hooks") and the API reference of PutLifecycleHook,
CompleteLifecycleAction, RecordLifecycleActionHeartbeat and LifecycleHook:

- An instance the group terminates (TerminateInstanceInAutoScalingGroup, a scale-in, EKS's update) while the group
  has hooks on ``autoscaling:EC2_INSTANCE_TERMINATING`` is put in ``Terminating:Wait``; its EC2 instance keeps
  running. One lifecycle action per hook starts, with its own token.
- "The instance remains in a wait state until you either complete the lifecycle action, or the timeout period ends":
  an action ends with CompleteLifecycleAction (by token or instance id), or when HeartbeatTimeout passes since it
  started or since its last RecordLifecycleActionHeartbeat ("This extends the timeout period by the timeout value
  specified when you created the lifecycle hook"), and never later than its GlobalTimeout after it started ("48
  hours or 100 times the heartbeat timeout, whichever is smaller"). On a timeout the hook's DefaultResult applies.
- "If the instance is terminating, both ABANDON and CONTINUE allow the instance to terminate. However, ABANDON stops
  any remaining actions, such as other lifecycle hooks, and CONTINUE allows any other lifecycle hooks to complete."
- Once no action remains the instance goes ``Terminating:Proceed`` and EC2 terminates it (shutting-down, then
  terminated, capacity.py). Its scaling activity is ``MidLifecycleAction`` while it waits (botocore's
  ScalingActivityStatusCode), ``InProgress`` after.
- PutLifecycleHook: HeartbeatTimeout "must be from 30 to 7200 seconds" (default 3600), DefaultResult CONTINUE or
  ABANDON (default ABANDON), LifecycleTransition required for a new hook and kept on an update.

Instance lifecycle policies (User Guide, "Control instance retention with instance lifecycle policies"
https://docs.aws.amazon.com/autoscaling/ec2/userguide/instance-lifecycle-policy.html, "Configure instance retention"
.../configure-instance-retention.html and "Manage retained instances" .../manage-retained-instances.html; API
reference InstanceLifecyclePolicy and RetentionTriggers):

- A group whose InstanceLifecyclePolicy has RetentionTriggers TerminateHookAbandon ``retain`` keeps an instance whose
  termination lifecycle action is abandoned: "When you explicitly call the CompleteLifecycleAction API with the
  ABANDON result", when an action "with default result ABANDON times out because the heartbeat timeout is reached",
  and when its global timeout is reached with default result ABANDON. "Instance lifecycle policies will only apply
  when termination lifecycle actions are abandoned, not when they complete successfully with the CONTINUE result",
  and without termination hooks "the policy has no effect". ``terminate`` (and no policy) is the default behaviour.
- The states: Terminating, Terminating:Wait, Terminating:Proceed, then ``Terminating:Retained`` ("Hook fails,
  instance retained for manual intervention"). The EC2 instance keeps running and the instance stays a member of
  the group in that state (Instances of DescribeAutoScalingGroups), but "Retained instances do not count toward
  your Amazon EC2 Auto Scaling group's desired capacity. When an instance enters a retained state, Auto Scaling
  launches a replacement instance" (the reconciler does: only Pending and InService count). "Standard Amazon EC2
  charges ... apply until you manually terminate the retained instance"; RetentionTriggers: retained instances
  "remain until you call TerminateInstanceInAutoScalingGroup" (moto_patches (g): a new termination, through
  the group's hooks again). EC2's TerminateInstances ends it too (it leaves the group once terminated, as any
  instance EC2 terminates).

Where the documentation is silent, the sandbox chooses (README "Where the sandbox had to choose"): the actions of
several termination hooks run at the same time, each with its own timeout; a hook put or deleted while an instance
waits does not change the actions already started; launch hooks are stored but not run (no ``Pending:Wait``); an
instance that EC2 itself terminates (TerminateInstances) is not held. For a retained instance: Terminating:Proceed
is passed at once (the instance is retained in the same step); its termination activity ends ``Cancelled`` (the
documentation names no status for it); TerminateInstanceInAutoScalingGroup with ShouldDecrementDesiredCapacity is
refused for it (it does not count toward the desired capacity, so there is nothing to decrement). The validation
messages are the sandbox's own wording (the rules are AWS's).
"""

from __future__ import annotations

import time
import uuid
from typing import Any

from moto.autoscaling.exceptions import ValidationError

from .activities import IN_PROGRESS

__all__ = ["LAUNCHING", "TERMINATING", "WAIT", "PROCEED", "RETAINED", "MID_LIFECYCLE_ACTION", "LifecycleAction",
           "begin_termination", "advance_lifecycle_actions", "complete_lifecycle_action",
           "record_lifecycle_action_heartbeat", "validate_hook", "global_timeout", "termination_hooks",
           "stop_waiting", "validate_instance_lifecycle_policy", "retains_abandoned"]

LAUNCHING, TERMINATING = "autoscaling:EC2_INSTANCE_LAUNCHING", "autoscaling:EC2_INSTANCE_TERMINATING"
WAIT, PROCEED, RETAINED = "Terminating:Wait", "Terminating:Proceed", "Terminating:Retained"
MID_LIFECYCLE_ACTION = "MidLifecycleAction"
RESULTS = ("CONTINUE", "ABANDON")
HEARTBEAT_MIN, HEARTBEAT_MAX, HEARTBEAT_DEFAULT = 30, 7200, 3600
GLOBAL_TIMEOUT_MAX = 172800  # 48 h
RETENTION_ACTIONS = ("retain", "terminate")  # botocore's RetentionAction
CANCELLED = "Cancelled"  # botocore's ScalingActivityStatusCode


def global_timeout(heartbeat_timeout: int) -> int:
    """LifecycleHook.GlobalTimeout: "The maximum is 172800 seconds (48 hours) or 100 times HeartbeatTimeout,
    whichever is smaller"."""
    return min(GLOBAL_TIMEOUT_MAX, 100 * heartbeat_timeout)


def validate_hook(transition: str | None, heartbeat_timeout: int | None, default_result: str | None) -> None:
    if transition is not None and transition not in (LAUNCHING, TERMINATING):
        raise ValidationError(f"Invalid LifecycleTransition {transition!r}: use {LAUNCHING} or {TERMINATING}")
    if heartbeat_timeout is not None and not HEARTBEAT_MIN <= heartbeat_timeout <= HEARTBEAT_MAX:
        raise ValidationError(f"HeartbeatTimeout must be from {HEARTBEAT_MIN} to {HEARTBEAT_MAX} seconds, "
                              f"got {heartbeat_timeout}")
    if default_result is not None and default_result not in RESULTS:
        raise ValidationError(f"DefaultResult must be CONTINUE or ABANDON, got {default_result!r}")


def validate_instance_lifecycle_policy(policy: Any) -> None:
    """InstanceLifecyclePolicy: RetentionTriggers.TerminateHookAbandon is ``retain`` or ``terminate`` (API reference
    RetentionTriggers, "Valid Values: retain | terminate"; botocore does not check enums on the client side)."""
    if not isinstance(policy, dict):
        raise ValidationError("InstanceLifecyclePolicy must be a structure")
    action = (policy.get("RetentionTriggers") or {}).get("TerminateHookAbandon")
    if action is not None and action not in RETENTION_ACTIONS:
        raise ValidationError(f"Invalid TerminateHookAbandon {action!r}: use retain or terminate")


def retains_abandoned(group: Any) -> bool:
    """Whether the group's InstanceLifecyclePolicy retains an instance whose termination action is abandoned."""
    policy = getattr(group, "instance_lifecycle_policy", None) or {}
    return (policy.get("RetentionTriggers") or {}).get("TerminateHookAbandon") == "retain"


def termination_hooks(group: Any) -> list[Any]:
    """The group's hooks on autoscaling:EC2_INSTANCE_TERMINATING (moto's LifecycleHook objects), by name."""
    hooks = group.autoscaling_backend.lifecycle_hooks.values()
    return sorted((h for h in hooks if h.auto_scaling_group_name == group.name
                   and h.lifecycle_transition == TERMINATING), key=lambda h: h.name)


class LifecycleAction:
    """One hook's action on one terminating instance (the hook's settings as they were when it started)."""

    def __init__(self, hook: Any, now: float):
        self.hook_name = hook.name
        self.heartbeat_timeout = hook.heartbeat_timeout
        self.default_result = hook.default_result
        self.token = str(uuid.uuid4())
        self.started = now
        self.global_deadline = now + global_timeout(hook.heartbeat_timeout)
        self.deadline = min(now + hook.heartbeat_timeout, self.global_deadline)

    def heartbeat(self, now: float) -> None:
        self.deadline = min(now + self.heartbeat_timeout, self.global_deadline)


def _actions(state: Any) -> list[LifecycleAction]:
    return getattr(state, "sandbox_lifecycle_actions", None) or []


def begin_termination(state: Any, now: float | None = None) -> bool:
    """Take an instance of the group out of service for termination: into Terminating:Wait when the group has
    termination hooks (True), else straight to EC2's TerminateInstances (False). The caller records the
    instance's scaling activity first (``state.instance.sandbox_activity``)."""
    group = state.auto_scaling_group
    hooks = termination_hooks(group)
    if not hooks:
        state.lifecycle_state = "Terminating"
        group.ec2_backend.terminate_instances([state.instance.id])
        return False
    now = time.monotonic() if now is None else now
    state.lifecycle_state = WAIT
    state.sandbox_lifecycle_actions = [LifecycleAction(hook, now) for hook in hooks]
    activity = getattr(state.instance, "sandbox_activity", None)
    if activity is not None and activity.status_code == IN_PROGRESS:
        activity.status_code = MID_LIFECYCLE_ACTION
    return True


def _proceed(state: Any) -> None:
    state.sandbox_lifecycle_actions = []
    state.lifecycle_state = PROCEED
    activity = getattr(state.instance, "sandbox_activity", None)
    if activity is not None and activity.status_code == MID_LIFECYCLE_ACTION:
        activity.status_code = IN_PROGRESS
    state.auto_scaling_group.ec2_backend.terminate_instances([state.instance.id])


def _retain(state: Any) -> None:
    """Terminating:Proceed, then Terminating:Retained: the EC2 instance keeps running, the group no longer counts it
    (its reconciler launches a replacement) and nothing terminates it until someone does (module docstring)."""
    state.sandbox_lifecycle_actions = []
    state.lifecycle_state = RETAINED
    activity = getattr(state.instance, "sandbox_activity", None)
    if activity is not None and activity.status_code in (MID_LIFECYCLE_ACTION, IN_PROGRESS):
        activity.finish(CANCELLED)


def _end(state: Any, action: LifecycleAction, result: str) -> None:
    remaining = [a for a in _actions(state) if a is not action] if result == "CONTINUE" else []
    state.sandbox_lifecycle_actions = remaining
    if result == "ABANDON" and retains_abandoned(state.auto_scaling_group):
        _retain(state)
    elif not remaining:
        _proceed(state)


def stop_waiting(state: Any) -> None:
    """The instance is being terminated by other means (EC2 TerminateInstances): its actions are dropped."""
    if state.lifecycle_state == WAIT:
        state.sandbox_lifecycle_actions = []
        state.lifecycle_state = PROCEED


def advance_lifecycle_actions(group: Any, now: float) -> None:
    """Apply DefaultResult to the actions whose timeout passed (CompleteLifecycleAction never came)."""
    for state in list(group.instance_states):
        if state.lifecycle_state != WAIT:
            continue
        for action in list(_actions(state)):
            if state.lifecycle_state == WAIT and action in _actions(state) and now >= action.deadline:
                _end(state, action, action.default_result)


def _find(backend: Any, group_name: str, hook_name: str, token: str | None,
          instance_id: str | None) -> tuple[Any, LifecycleAction]:
    group = backend.autoscaling_groups.get(group_name)
    for state in (group.instance_states if group is not None else []):
        if state.lifecycle_state != WAIT:
            continue
        for action in _actions(state):
            if action.hook_name == hook_name and (action.token == token if token else state.instance.id == instance_id):
                return state, action
    if token:
        raise ValidationError(f"No active Lifecycle Action found with token {token}")
    raise ValidationError(f"No active Lifecycle Action found with instance ID {instance_id}")


def _require_target(token: str | None, instance_id: str | None) -> None:
    if not token and not instance_id:
        raise ValidationError("Either LifecycleActionToken or InstanceId must be specified")


def complete_lifecycle_action(backend: Any, group_name: str, hook_name: str, result: str, token: str | None = None,
                              instance_id: str | None = None) -> None:
    """CompleteLifecycleAction."""
    if result not in RESULTS:
        raise ValidationError(f"LifecycleActionResult must be CONTINUE or ABANDON, got {result!r}")
    _require_target(token, instance_id)
    state, action = _find(backend, group_name, hook_name, token, instance_id)
    _end(state, action, result)


def record_lifecycle_action_heartbeat(backend: Any, group_name: str, hook_name: str, token: str | None = None,
                                      instance_id: str | None = None, now: float | None = None) -> None:
    """RecordLifecycleActionHeartbeat."""
    _require_target(token, instance_id)
    dummy, action = _find(backend, group_name, hook_name, token, instance_id)
    action.heartbeat(time.monotonic() if now is None else now)
