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

Where the documentation is silent, the sandbox chooses (README "Where the sandbox had to choose"): the actions of
several termination hooks run at the same time, each with its own timeout; a hook put or deleted while an instance
waits does not change the actions already started; launch hooks are stored but not run (no ``Pending:Wait``); an
instance that EC2 itself terminates (TerminateInstances) is not held. The validation messages are the sandbox's own
wording (the rules are AWS's).
"""

from __future__ import annotations

import time
import uuid
from typing import Any

from moto.autoscaling.exceptions import ValidationError

from .activities import IN_PROGRESS

__all__ = ["LAUNCHING", "TERMINATING", "WAIT", "PROCEED", "MID_LIFECYCLE_ACTION", "LifecycleAction",
           "begin_termination", "advance_lifecycle_actions", "complete_lifecycle_action",
           "record_lifecycle_action_heartbeat", "validate_hook", "global_timeout", "termination_hooks",
           "stop_waiting"]

LAUNCHING, TERMINATING = "autoscaling:EC2_INSTANCE_LAUNCHING", "autoscaling:EC2_INSTANCE_TERMINATING"
WAIT, PROCEED = "Terminating:Wait", "Terminating:Proceed"
MID_LIFECYCLE_ACTION = "MidLifecycleAction"
RESULTS = ("CONTINUE", "ABANDON")
HEARTBEAT_MIN, HEARTBEAT_MAX, HEARTBEAT_DEFAULT = 30, 7200, 3600
GLOBAL_TIMEOUT_MAX = 172800  # 48 h


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


def _end(state: Any, action: LifecycleAction, result: str) -> None:
    remaining = [a for a in _actions(state) if a is not action] if result == "CONTINUE" else []
    state.sandbox_lifecycle_actions = remaining
    if not remaining:
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
