# -*- coding: utf-8 -*-
# Copyright: Contributors to the eksops.nodegroup project
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Terminating instances through their Auto Scaling group, and waiting until they are gone: EC2's view of
them, and the group's lifecycle hooks on termination (SPEC U5, U6)."""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping, Sequence
from typing import Any
import re

from ansible_collections.eksops.nodegroup.plugins.module_utils.nodegroup.asg_state import ASG_POLL_SECONDS
from ansible_collections.eksops.nodegroup.plugins.module_utils.aws import autoscaling as autoscaling_api
from ansible_collections.eksops.nodegroup.plugins.module_utils.errors import NOT_FOUND, WAIT_TIMEOUT, UpgradeError
from ansible_collections.eksops.nodegroup.plugins.module_utils.host import clock as clocks
from ansible_collections.eksops.nodegroup.plugins.module_utils.host.waiter import Backoff, Waiter
from ansible_collections.eksops.nodegroup.plugins.module_utils.members.instances import describe_instances
from ansible_collections.eksops.nodegroup.plugins.module_utils.nodegroup.discovery import describe_asg
from ansible_collections.eksops.nodegroup.plugins.module_utils.plan.instance_choice import LEAVING_STATES

# Waiting for a termination: first look after EC2_FIRST_POLL_SECONDS (a quick shutdown is seen quickly, and never
# more often than once a second, issue 11 item 4), then back off (x2) to one DescribeInstances every
# EC2_POLL_SECONDS. The node_replace action waits so while the next batch drains.
EC2_FIRST_POLL_SECONDS = 1.0
EC2_POLL_SECONDS = 2.0
# Lifecycle hooks ("Amazon EC2 Auto Scaling lifecycle hooks", Auto Scaling user guide): a hook on this transition
# holds an instance that the group terminates in TERMINATING_WAIT until whoever owns the hook completes the
# lifecycle action (CompleteLifecycleAction) or the hook's HeartbeatTimeout passes without a heartbeat; the EC2
# instance keeps running meanwhile.
TERMINATING_TRANSITION = "autoscaling:EC2_INSTANCE_TERMINATING"
TERMINATING_WAIT = "Terminating:Wait"
# Instance lifecycle policies (Auto Scaling user guide, "Control instance retention with instance lifecycle policies"
# and "Manage retained instances"; API reference RetentionTriggers): in a group whose policy has TerminateHookAbandon
# "retain", an instance whose termination lifecycle action is abandoned (CompleteLifecycleAction ABANDON, or a
# timeout whose DefaultResult is ABANDON) goes Terminating:Proceed -> Terminating:Retained instead of terminating.
# Its EC2 instance keeps running until someone terminates it; "Retained instances do not count toward your Amazon
# EC2 Auto Scaling group's desired capacity". For a termination wait it is done: it will not terminate by itself.
TERMINATING_RETAINED = "Terminating:Retained"
# PutLifecycleHook's defaults, for a description that leaves them out.
HOOK_HEARTBEAT_DEFAULT = 3600
HOOK_DEFAULT_RESULT = "ABANDON"
# EC2's InvalidInstanceID.NotFound message names the ids it does not know ("The instance IDs 'i-1, i-2' do not
# exist").
_INSTANCE_ID = re.compile(r"\bi-[0-9a-f]{8,17}\b")


def describe_known_instances(ec2: Any, instance_ids: Iterable[str]) -> tuple[dict[str, dict[str, Any]], list[str]]:
    """(EC2 descriptions {instance_id: description}, ids EC2 does not know).

    DescribeInstances fails as a whole with InvalidInstanceID.NotFound when one id is unknown: an instance
    launched a moment ago that has not propagated yet (EC2's API is eventually consistent; the EC2 error codes page
    says so of this code) or one terminated long enough ago that EC2 forgot it. The call is repeated without the
    ids the error names (or, when it names none, once per id), so the others are still described.
    """
    pending = sorted(set(instance_ids))
    unknown = []
    while pending:
        try:
            return describe_instances(ec2, pending), unknown
        except UpgradeError as err:
            if err.code != NOT_FOUND:
                raise
            named = set(_INSTANCE_ID.findall(err.details.get("aws_error_message") or "")) & set(pending)
            if not named:
                break
            unknown.extend(sorted(named))
            pending = [i for i in pending if i not in named]
    found = {}
    for instance_id in pending:
        try:
            found.update(describe_instances(ec2, [instance_id]))
        except UpgradeError as single:
            if single.code != NOT_FOUND:
                raise
            unknown.append(instance_id)
    return found, sorted(unknown)


def _instance_states(ec2: Any, instance_ids: Iterable[str]) -> dict[str, str]:
    """{instance_id: state name}; instances EC2 no longer knows (purged after termination) are left out."""
    found, _unknown = describe_known_instances(ec2, instance_ids)
    return dict((instance_id, description["State"]["Name"]) for instance_id, description in found.items())


def terminate_or_gone(autoscaling: Any, ec2: Any, asg_name: str, instance_id: str, decrement: bool) -> bool:
    """TerminateInstanceInAutoScalingGroup; True when this call terminated the instance, False when it was gone
    already (issue 10 item 11).

    Between the group's description and this call the instance may have been terminated by someone else (another
    run, a scale-in, a health check replacement); AWS then answers ValidationError ("Instance Id not found - No
    managed instance found for instance ID: ..."). Only when the group, described again, is terminating it or no
    longer has it, and EC2 shows it shutting down, terminated or does not know it any more, is that "gone
    already"; any other refusal (e.g. a decrement below MinSize) is raised as it came.
    """
    try:
        autoscaling_api.terminate_instance_in_auto_scaling_group(autoscaling, instance_id, decrement)
        return True
    except UpgradeError as err:
        if err.details.get("aws_error_code") != "ValidationError":
            raise
        members = dict((i["InstanceId"], i.get("LifecycleState")) for i in describe_asg(
            autoscaling, asg_name).get("Instances", []))
        if instance_id in members:
            if members[instance_id] in LEAVING_STATES:
                return False
            raise err
        found, _unknown = describe_known_instances(ec2, [instance_id])
        if (found.get(instance_id) or {}).get("State", {}).get("Name") in (None, "shutting-down", "terminated"):
            return False
        raise err


def termination_hooks(autoscaling: Any, asg_name: str) -> list[dict[str, Any]]:
    """The group's lifecycle hooks on autoscaling:EC2_INSTANCE_TERMINATING, by name, in snake_case:
    {name, heartbeat_timeout, global_timeout, default_result}. One DescribeLifecycleHooks call (it is not paged:
    a group has at most 50 hooks)."""
    hooks = autoscaling_api.describe_lifecycle_hooks(autoscaling, asg_name)
    found = [dict(name=hook["LifecycleHookName"],
                  heartbeat_timeout=hook.get("HeartbeatTimeout") or HOOK_HEARTBEAT_DEFAULT,
                  global_timeout=hook.get("GlobalTimeout"),
                  default_result=hook.get("DefaultResult") or HOOK_DEFAULT_RESULT)
             for hook in hooks if hook.get("LifecycleTransition") == TERMINATING_TRANSITION]
    return sorted(found, key=lambda hook: hook["name"])


def hook_hold_seconds(hooks: Iterable[Mapping[str, Any]]) -> int:
    """How long termination hooks hold an instance in Terminating:Wait when nobody completes their actions and
    nobody records a heartbeat: then each hook's HeartbeatTimeout passes and its DefaultResult (CONTINUE or ABANDON:
    for a terminating instance both let it terminate) applies. AWS does not document whether the actions of
    several hooks run one after the other or together; their sum bounds both."""
    return sum(hook["heartbeat_timeout"] for hook in hooks)


def instances_gone(pending: Sequence[str]) -> bool:
    """The termination wait's predicate: no instance is left to wait for."""
    return not pending


def describe_hooks(hooks: Iterable[Mapping[str, Any]]) -> str:
    """'drain' (HeartbeatTimeout 300 s, DefaultResult CONTINUE), ... for messages."""
    return ", ".join("'%s' (HeartbeatTimeout %d s, DefaultResult %s)"
                     % (hook["name"], hook["heartbeat_timeout"], hook["default_result"]) for hook in hooks)


class TerminationWait:
    """Wait until instances are terminated (or gone from EC2), through the group's termination lifecycle hooks: a
    Waiter (host/waiter.py) polls ``look`` until ``instances_gone``.

    EC2 is polled (DescribeInstances) after ``first_poll`` seconds, then twice as long each time up to ``poll``.
    With ``hooks`` (termination_hooks, read once by the caller), the group is also described, at most every
    ``asg_poll`` seconds, while an instance is not terminated yet: an instance in Terminating:Wait is held by the
    hooks, and the wait's deadline moves to when it was first seen there plus hook_hold_seconds(hooks) plus
    ``timeout`` (for the shutdown after the hooks): the hooks' owner, not this wait, decides when it goes. The
    lifecycle action is never completed here: it belongs to whoever owns the hook. An instance the group retains
    (Terminating:Retained: its action was abandoned and the group's instance lifecycle policy retains it) is no
    longer waited for; ``retained_instances()`` lists it.
    """

    def __init__(self, ec2: Any, autoscaling: Any = None, asg_name: str | None = None, hooks: Iterable[dict[str, Any]] = (), clock: Any = None,
                 poll: float = EC2_POLL_SECONDS, first_poll: float = EC2_FIRST_POLL_SECONDS, asg_poll: float = ASG_POLL_SECONDS) -> None:
        self.ec2 = ec2
        self.autoscaling = autoscaling
        self.asg_name = asg_name
        self.hooks = list(hooks)
        self.clock = clock or clocks.SYSTEM_CLOCK
        self.poll = poll
        self.first_poll = first_poll
        self.asg_poll = asg_poll
        self.held_since = {}    # instance id -> clock time it was first seen in Terminating:Wait
        self.held_until = {}    # instance id -> clock time it was first seen out of it again
        self.lifecycle = {}     # instance id -> the group's last lifecycle state for it (None: not in the group)
        self.ec2_states = {}    # instance id -> EC2's last state for it
        self.retained = {}      # instance id -> clock time it was first seen in Terminating:Retained
        self.extension = 0.0    # seconds the hooks added to the deadline
        self.timeout = None
        self._next_asg_poll = None

    def _observe(self, pending: Iterable[str], now: float) -> None:
        try:
            instances = describe_asg(self.autoscaling, self.asg_name).get("Instances", [])
        except UpgradeError as err:
            if err.code != NOT_FOUND:
                raise
            instances = []
        states = dict((i["InstanceId"], i.get("LifecycleState")) for i in instances)
        for instance_id in pending:
            self.lifecycle[instance_id] = states.get(instance_id)
            if states.get(instance_id) == TERMINATING_WAIT:
                self.held_since.setdefault(instance_id, now)
                self.held_until.pop(instance_id, None)
            elif instance_id in self.held_since:
                self.held_until.setdefault(instance_id, now)
        self.note_retained(dict(Instances=instances), pending, now)

    def note_retained(self, asg: Mapping[str, Any], instance_ids: Iterable[str], now: float | None = None) -> None:
        """Record which of ``instance_ids`` a group description (DescribeAutoScalingGroups) shows in
        Terminating:Retained: the caller's own description from before the wait tells which were retained already
        (they are not waited for, even when the group has no termination hooks left)."""
        now = self.clock.now() if now is None else now
        for instance in asg.get("Instances", []):
            if instance["InstanceId"] in instance_ids and instance.get("LifecycleState") == TERMINATING_RETAINED:
                self.retained.setdefault(instance["InstanceId"], now)

    def retained_instances(self) -> list[str]:
        """The instances the group retained (Terminating:Retained) instead of terminating them."""
        return sorted(self.retained)

    def held_now(self, instance_ids: Iterable[str]) -> list[str]:
        return [i for i in instance_ids if i in self.held_since and i not in self.held_until]

    def run(self, instance_ids: Iterable[str], timeout: float,
            on_timeout: Callable[[list[str]], UpgradeError] | None = None) -> list[str]:
        """Returns the ids still not terminated at the deadline (empty when all are); with ``on_timeout``, raises
        ``on_timeout(those ids)`` instead."""
        self.timeout = timeout
        waiter = Waiter(instances_gone, timeout, self.clock)
        base_deadline = waiter.deadline
        self._next_asg_poll = waiter.started
        pending = sorted(set(instance_ids) - set(self.retained))
        if pending:
            _gone, pending = waiter.poll(lambda: self.look(waiter, instance_ids, pending),
                                         Backoff(self.first_poll, self.poll), pace=self._pace, on_timeout=on_timeout)
        self.extension = waiter.deadline - base_deadline
        return pending

    def look(self, waiter: Waiter, instance_ids: Iterable[str], pending: list[str]) -> list[str]:
        """One look at ``pending`` (updated in place, and returned): EC2, and the group at most every ``asg_poll``
        seconds; an instance a hook holds moves ``waiter``'s deadline."""
        states = _instance_states(self.ec2, pending)
        self.ec2_states.update(states)
        pending[:] = [i for i in pending if states.get(i, "terminated") != "terminated"]
        for instance_id in set(instance_ids) - set(pending):
            if instance_id in self.held_since:
                self.held_until.setdefault(instance_id, self.clock.now())
        now = self.clock.now()
        if pending and self.hooks and now >= self._next_asg_poll:
            self._observe(pending, now)
            self._next_asg_poll = now + self.asg_poll
            # Retained: it runs on until someone terminates it by hand; nothing more to wait for.
            pending[:] = [i for i in pending if i not in self.retained]
        held = self.held_now(pending)
        if held:
            hold = hook_hold_seconds(self.hooks)
            waiter.extend(max(self.held_since[i] + hold + self.timeout for i in held))
        return pending

    def _pace(self, pending: Sequence[str]) -> float:
        """While every instance waits for a hook, nothing changes faster than the group can be polled."""
        held = self.held_now(pending)
        return self.asg_poll if held and len(held) == len(pending) else 0.0

    def hook_waits(self, now: float | None = None) -> list[dict[str, Any]]:
        """Each instance seen in Terminating:Wait: {instance_id, lifecycle_hooks, held_seconds, still_held}."""
        now = self.clock.now() if now is None else now
        names = [hook["name"] for hook in self.hooks]
        return [dict(instance_id=i, lifecycle_hooks=names,
                     held_seconds=round(self.held_until.get(i, now) - self.held_since[i], 1),
                     still_held=i not in self.held_until)
                for i in sorted(self.held_since)]

    def timeout_error(self, pending: Sequence[str], asg_name: str) -> UpgradeError:
        """WaitTimeout naming, for each instance, what it waits for (the hooks, by name)."""
        total = self.timeout + self.extension
        why = []
        held = self.held_now(pending)
        for instance_id in pending:
            if instance_id in held:
                why.append("%s is still in Terminating:Wait after %d s, held by lifecycle hook(s) %s: whoever owns the "
                           "hook keeps its action open (RecordLifecycleActionHeartbeat) and has not completed it"
                           % (instance_id, self.clock.now() - self.held_since[instance_id],
                              describe_hooks(self.hooks)))
            else:
                lifecycle = self.lifecycle.get(instance_id, "unknown")
                why.append("%s is %s in EC2%s" % (
                    instance_id, self.ec2_states.get(instance_id, "unknown"),
                    "" if lifecycle == "unknown" else ", %s in the group" % (lifecycle or "no longer")))
        message = "Instances %s of %s were not terminated within %d s (wait_timeout %d s%s): %s" % (
            ", ".join(pending), asg_name, total, self.timeout,
            " plus %d s for termination lifecycle hook(s) %s" % (self.extension, describe_hooks(self.hooks))
            if self.extension else "", "; ".join(why))
        if held:
            message += (". This module never completes another's lifecycle action: let the hook's owner finish, or "
                        "complete it yourself (aws autoscaling complete-lifecycle-action --auto-scaling-group-name %s "
                        "--lifecycle-hook-name <hook> --instance-id <instance> --lifecycle-action-result CONTINUE), "
                        "then rerun" % asg_name)
        return UpgradeError(WAIT_TIMEOUT, message, asg_name=asg_name, instance_ids=pending,
                            lifecycle_hooks=self.hooks, lifecycle_hook_waits=self.hook_waits(),
                            retained_instances=self.retained_instances())


def retained_warnings(retained: Iterable[str], asg_name: str, terminated: Iterable[str],
                      never_joined: Iterable[str]) -> list[str]:
    """One warning per retained instance: what happened to it, and the command that ends it. ``terminated`` are the
    instances this run asked the group to terminate (their nodes were checked drained, U5), ``never_joined`` those
    of them that had no node; the others were already leaving the group (or retained) when the run looked."""
    terminated, never_joined = set(terminated), set(never_joined)
    warnings = []
    for instance_id in sorted(retained):
        if instance_id in never_joined:
            before = "had no Kubernetes node (it never joined the cluster)"
        elif instance_id in terminated:
            before = "was drained (its node stays in the cluster, cordoned, while the instance runs)"
        else:
            before = "was already leaving the group when this run looked at it (terminated or retained before)"
        warnings.append(
            "Instance %s of Auto Scaling group %s %s, and Auto Scaling retained it instead of terminating it: its "
            "termination lifecycle action was abandoned and the group's instance lifecycle policy retains such "
            "instances (RetentionTriggers TerminateHookAbandon=retain), so it is in Terminating:Retained. It no longer "
            "counts toward the group's desired capacity, and it keeps running, and costing, until it is terminated by "
            "hand: aws ec2 terminate-instances --instance-ids %s" % (instance_id, asg_name, before, instance_id))
    return warnings


def wait_terminated(ec2: Any, instance_ids: Iterable[str], timeout: float, poll: float = EC2_POLL_SECONDS, clock: Any = None,
                    first_poll: float = EC2_FIRST_POLL_SECONDS,
                    on_timeout: Callable[[list[str]], UpgradeError] | None = None) -> list[str]:
    """Wait until every instance is terminated (or gone); returns the ids still not terminated at timeout (with
    ``on_timeout``, raises ``on_timeout(those ids)`` instead).

    Polls after ``first_poll`` seconds, then twice as long each time up to ``poll``. No lifecycle hooks: see
    TerminationWait.
    """
    return TerminationWait(ec2, clock=clock, poll=poll, first_poll=first_poll).run(instance_ids, timeout, on_timeout)
