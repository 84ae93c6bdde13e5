# -*- coding: utf-8 -*-
# Copyright: Contributors to the eksops.nodegroup project
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""The terminate step: asg_instance_terminate's work for a module or the node_replace action.

What is asked is a TerminateStep (typed, built once from the validated options); what was done a Termination, from
which the module's result (RETURN) is built at the module's boundary. ``module`` is anything with the EksopsModule
surface these functions use: ``check_mode``, ``_diff``, ``aws(service)``, ``core_v1()``, ``warn``, ``log``,
``with_diff`` and ``params`` for the module's run; the lease's claim reads ``params["lease_id"]`` and the check
of the desired capacity ``params["accept_current_capacity"]`` (SPEC C3).
"""

from __future__ import annotations

import datetime
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, replace
from typing import Any
import re
import time

from ansible_collections.eksops.nodegroup.plugins.module_utils.nodegroup.asg_state import (
    asg_sizes,
    check_capacity_unmoved,
    SCALE_IN_PROTECTION_OURS,
    set_scale_in_protection,
)
from ansible_collections.eksops.nodegroup.plugins.module_utils.host.clock import utc_now
from ansible_collections.eksops.nodegroup.plugins.module_utils.members.group_watch import GroupSnapshot, GroupWatch
from ansible_collections.eksops.nodegroup.plugins.module_utils.host.waiter import Waiter
from ansible_collections.eksops.nodegroup.plugins.module_utils.members.group_nodes import list_nodegroup_nodes
from ansible_collections.eksops.nodegroup.plugins.module_utils.nodegroup.termination import (
    describe_known_instances,
    retained_warnings,
    terminate_or_gone,
    termination_hooks,
    TerminationWait,
)
from ansible_collections.eksops.nodegroup.plugins.module_utils.aws import autoscaling as autoscaling_api
from ansible_collections.eksops.nodegroup.plugins.module_utils.nodegroup.cluster_proof import (
    NODE_READY_TIMEOUT_DEFAULT,
    nodeless_instances,
)
from ansible_collections.eksops.nodegroup.plugins.module_utils.errors import (
    CLUSTER_UNREACHABLE,
    NODE_CREATION_FAILURE,
    POD_EVICTION_FAILURE,
    UpgradeError,
    invalid_parameter,
)
from ansible_collections.eksops.nodegroup.plugins.module_utils.nodegroup.journal import Journal, write_journal
from ansible_collections.eksops.nodegroup.plugins.module_utils.nodegroup.launch_templates import check_launch_template_unmoved
from ansible_collections.eksops.nodegroup.plugins.module_utils.nodegroup.lease import LEASE_OPTION, claim
from ansible_collections.eksops.nodegroup.plugins.module_utils.nodegroup.discovery import (
    NODEGROUP_ARGUMENT_SPEC,
    NodegroupRef,
    describe_asg,
    find_nodegroup,
)
from ansible_collections.eksops.nodegroup.plugins.module_utils.drain import (
    termination_check,
    termination_problems_message,
)
from ansible_collections.eksops.nodegroup.plugins.module_utils.plan.instance_choice import LEAVING_STATES
from ansible_collections.eksops.nodegroup.plugins.module_utils.plan.launch_failures import (
    launch_failure_error,
    persistent_launch_failure,
)

ARGUMENT_SPEC = dict(
    NODEGROUP_ARGUMENT_SPEC,
    instance_ids=dict(type="list", elements="str", required=True),
    should_decrement_desired_capacity=dict(type="bool", required=True),
    wait=dict(type="bool", default=True),
    wait_timeout=dict(type="int", default=600),
    wait_for_replacements=dict(type="bool", default=False),
    node_ready_timeout=dict(type="int", default=NODE_READY_TIMEOUT_DEFAULT),
    accept_current_capacity=dict(type="bool", default=False),
    **LEASE_OPTION
)

INSTANCE_ID = re.compile(r"^i-[0-9a-f]{8,17}$")


@dataclass(frozen=True)
class TerminateStep:
    """asg_instance_terminate's options, typed, built once from validated params (from_params; node_replace builds
    them once for its phase and names each round's instances with of_round), as kubectl's drain command builds
    its drain.Helper once (kubernetes/kubectl pkg/cmd/drain/drain.go, DrainCmdOptions.Complete). The run's lease
    and accept_current_capacity are the run's, read from the module's params where they are used (claim,
    check_capacity_unmoved)."""

    instance_ids: tuple[str, ...]
    decrement: bool
    wait: bool
    wait_timeout: int
    wait_for_replacements: bool
    node_ready_timeout: int
    cluster_name: str
    nodegroup_name: str
    asg_name: str | None = None

    @classmethod
    def from_params(cls, params: Mapping[str, Any]) -> TerminateStep:
        """From asg_instance_terminate's validated params (the module's names)."""
        return cls(instance_ids=tuple(params["instance_ids"]), decrement=params["should_decrement_desired_capacity"],
                   wait=params["wait"], wait_timeout=params["wait_timeout"],
                   wait_for_replacements=params["wait_for_replacements"],
                   node_ready_timeout=params["node_ready_timeout"], cluster_name=params["cluster_name"],
                   nodegroup_name=params["nodegroup_name"], asg_name=params["asg_name"])

    def of_round(self, instance_ids: Sequence[str], decrement: bool) -> TerminateStep:
        """The same options for the instances of one termination round."""
        return replace(self, instance_ids=tuple(instance_ids), decrement=decrement)


def validate_params(step: TerminateStep) -> None:
    """``step``'s options, refused naming the module's parameter, before any request."""
    ids = step.instance_ids
    if not ids:
        raise invalid_parameter("instance_ids", "instance_ids must name at least one instance")
    bad = [i for i in ids if not INSTANCE_ID.match(i)]
    if bad:
        raise invalid_parameter("instance_ids", "instance_ids: %s is not an EC2 instance id" % ", ".join(bad))
    if step.wait_timeout <= 0:
        raise invalid_parameter("wait_timeout", "wait_timeout must be > 0, got %d" % step.wait_timeout)
    if step.node_ready_timeout < 0:
        raise invalid_parameter("node_ready_timeout", "node_ready_timeout must be >= 0, got %d"
                                % step.node_ready_timeout)
    if step.wait_for_replacements and step.decrement:
        raise invalid_parameter("wait_for_replacements", "wait_for_replacements needs "
                                "should_decrement_desired_capacity false: with a decrement nothing replaces them")


# EC2 states of an instance outside the group that is on its way out (it left the group once terminated).
GONE_STATES = ("shutting-down", "terminated")


def classify_instances(ec2: Any, asg: dict[str, Any], instance_ids: list[str]) -> tuple[list[str], list[str]]:
    """(to terminate, already leaving or terminated); refuses ids outside the group, naming them.

    An id outside the group that EC2 does not know (InvalidInstanceID.NotFound) is refused too: it never existed
    or was terminated so long ago that EC2 forgot it, and this module cannot tell which; the message says so.
    """
    members = dict((i["InstanceId"], i) for i in asg.get("Instances", []))
    outside = sorted(set(i for i in instance_ids if i not in members))
    gone = []
    if outside:
        described, unknown = describe_known_instances(ec2, outside)
        gone = [i for i in outside if (described.get(i) or {}).get("State", {}).get("Name") in GONE_STATES]
        strangers = [i for i in outside if i not in gone]
        if strangers:
            msg = "instance_ids: %s %s not in Auto Scaling group %s" % (
                ", ".join(strangers), "is" if len(strangers) == 1 else "are", asg["AutoScalingGroupName"])
            if unknown:
                msg += " (EC2 does not know %s: never launched, or terminated long enough ago to be forgotten)" \
                    % ", ".join(unknown)
            raise invalid_parameter("instance_ids", msg, instance_ids=strangers)
    to_terminate, leaving = [], list(gone)
    for instance_id in dict.fromkeys(instance_ids):
        if instance_id in members:
            if members[instance_id].get("LifecycleState") in LEAVING_STATES:
                leaving.append(instance_id)
            else:
                to_terminate.append(instance_id)
    return to_terminate, leaving


class ReplacementsReady:
    """The group is back at its desired capacity and every instance launched since is a Ready node."""

    def __init__(self, initial_ids: Iterable[str], terminated_ids: Iterable[str]) -> None:
        self.initial_ids = set(initial_ids)
        self.terminated_ids = set(terminated_ids)

    def replacements(self, snapshot: GroupSnapshot) -> list[dict[str, Any]]:
        return [i for i in snapshot.instances if i["instance_id"] not in self.initial_ids
                and i["lifecycle_state"] not in LEAVING_STATES]

    def problems(self, snapshot: GroupSnapshot) -> list[str]:
        serving = [i for i in snapshot.instances if i["instance_id"] not in self.terminated_ids
                   and i["lifecycle_state"] not in LEAVING_STATES]
        problems = ["%s (%s): node is not Ready" % (i["instance_id"], i["availability_zone"])
                    for i in self.replacements(snapshot) if not (i["node_name"] and i["ready"])]
        missing = snapshot.asg["DesiredCapacity"] - len(serving)
        if missing > 0:
            problems.append("%d replacement instance(s) not launched yet" % missing)
        return problems

    def __call__(self, snapshot: GroupSnapshot) -> bool:
        return persistent_launch_failure(snapshot.failures) is not None or not self.problems(snapshot)


def check_drained(module: Any, group: NodegroupRef, instance_ids: list[str],
                  node_ready_timeout: int) -> list[dict[str, Any]]:
    """U5: refuse to terminate instances whose node is not cordoned or still runs pods (warn in check mode).
    Returns why each instance without a node has none: the cluster is proven (K4), so it never joined."""
    check = termination_check(module.core_v1(), instance_ids, group.node_selector)
    if check["problems"]:
        message = termination_problems_message(check["problems"])
        if not module.check_mode:
            raise UpgradeError(POD_EVICTION_FAILURE, message, undrained=check["problems"])
        module.warn(message)
    if not check["nodeless"]:
        return []
    if not list_nodegroup_nodes(module.core_v1(), group):
        # Not one instance of the group has a node here: this is not the group's cluster, whatever proved it.
        raise UpgradeError(
            CLUSTER_UNREACHABLE, "None of the instances of Auto Scaling group %s has a node in the Kubernetes API "
            "in use (by spec.providerID): refusing to terminate %s as instances that never joined; check that the "
            "API is cluster %s's. This module changed nothing."
            % (group.asg_name, ", ".join(check["nodeless"]), group.cluster_name),
            asg_name=group.asg_name, instance_ids=check["nodeless"])
    described, not_visible = describe_known_instances(module.aws("ec2"), check["nodeless"])
    nodeless = nodeless_instances(check["nodeless"], described, utc_now(), node_ready_timeout)
    for instance in nodeless:
        if instance["instance_id"] in not_visible:
            # A member of the group that DescribeInstances does not know yet: launched a moment ago (EC2's
            # eventual consistency, issue 10 item 11).
            instance["reason"] = "was launched a moment ago: EC2 does not describe it yet, and it has no node"
        module.warn("instance %s %s; it is terminated without a drain" % (instance["instance_id"], instance["reason"]))
    return nodeless


def wait_for_replacements(module: Any, group: NodegroupRef, initial_ids: list[str], terminated_ids: list[str],
                          started: datetime.datetime, timeout: float) -> list[dict[str, Any]]:
    name = group.asg_name
    condition = ReplacementsReady(initial_ids, terminated_ids)
    watch = GroupWatch(module.aws("autoscaling"), module.aws("ec2"), module.core_v1(), group,
                       activities_since=started)
    held, snapshot = watch.wait(Waiter(condition, timeout))
    failure = persistent_launch_failure(snapshot.failures)
    if failure is not None:
        raise launch_failure_error(failure, name, what="a replacement")
    replacements = [dict(instance_id=i["instance_id"], availability_zone=i["availability_zone"],
                         node_name=i["node_name"], ready=i["ready"]) for i in condition.replacements(snapshot)]
    if not held:
        raise UpgradeError(NODE_CREATION_FAILURE, "Replacements in Auto Scaling group %s were not ready within %d s "
                           "(wait_timeout): %s" % (name, timeout, "; ".join(condition.problems(snapshot))),
                           asg_name=name, replacements=replacements)
    return replacements


def sizes_after(before: dict[str, int], decrements: int, journal: Journal | None, name: str) -> dict[str, int]:
    """The sizes once ``decrements`` terminations have each lowered the desired capacity: MinSize goes down with
    it during an upgrade (the journal restores it at the scale-down), and is never lowered outside one."""
    after = dict(before)
    if decrements:
        after["desired_capacity"] = before["desired_capacity"] - decrements
        if after["desired_capacity"] < before["min_size"]:
            if journal is None:
                raise invalid_parameter(
                    "should_decrement_desired_capacity",
                    "should_decrement_desired_capacity: decrementing for %d instance(s) takes DesiredCapacity of %s "
                    "to %d, below MinSize %d; outside an upgrade (no journal to restore MinSize from) this module "
                    "does not lower MinSize" % (decrements, name, after["desired_capacity"], before["min_size"]))
            after["min_size"] = after["desired_capacity"]
    return after


def terminate(module: Any, decrement: bool, group: NodegroupRef, journal: Journal | None, to_terminate: list[str],
              leaving: list[str], before: dict[str, int], after: dict[str, int],
              result: dict[str, Any]) -> tuple[list[str], list[str]]:
    """Terminate through the group, then record the desired capacity in the journal. Returns (terminated,
    leaving): an instance someone else terminated meanwhile is leaving, not terminated by this run."""
    autoscaling, ec2, name = module.aws("autoscaling"), module.aws("ec2"), group.asg_name
    if journal is not None and journal.scale_in_protection == SCALE_IN_PROTECTION_OURS:
        # The replacements the group launched for the previous batches hold the pods moved there: protected
        # from scale-in like every node of the upgrade (issue 10 item 22).
        set_scale_in_protection(autoscaling, group.asg, True)
    first = journal
    if after["min_size"] != before["min_size"]:
        # Lowered only in an upgrade (sizes_after): recorded first, with the MinSize to restore when the journal
        # has none yet, so that the restore can tell this MinSize from one set by hand (issue 29 item 4).
        first = journal.replace(original_min_size=before["min_size"] if journal.original_min_size is None
                                else journal.original_min_size).size_set("min_size", after["min_size"],
                                                                         before["min_size"])
    # Recorded first too, the desired capacity the decrements leave (SPEC C3): a rerun after a kill among the
    # terminations keeps it, and adds no node the schedule once would have to drain again (issue 25 item 1).
    pending = bool(decrement and to_terminate and journal is not None)
    if pending:
        first = first.replace(desired_capacity_pending=after["desired_capacity"])
    if first != journal:
        write_journal(autoscaling, name, first, previous=journal)
        journal = first
    if after["min_size"] != before["min_size"]:
        autoscaling_api.update_sizes(autoscaling, name, min_size=after["min_size"])
    raced = [i for i in to_terminate if not terminate_or_gone(autoscaling, ec2, name, i, decrement)]
    if raced:
        # Terminated by someone else since the group was described (issue 10 item 11): not this run's change,
        # nor its decrement.
        to_terminate = [i for i in to_terminate if i not in raced]
        leaving = leaving + raced
        result.update(terminated=to_terminate, already_terminated=sorted(leaving))
        if decrement:
            after["desired_capacity"] = before["desired_capacity"] - len(to_terminate)
    # The capacity set once Auto Scaling accepted the terminations; a crash before this write leaves the group
    # between desired_capacity_pending and desired_capacity_set, which is never mistaken for the autoscaler (C3).
    if pending:
        write_journal(autoscaling, name, journal.replace(desired_capacity_set=after["desired_capacity"],
                                                         desired_capacity_pending=None), previous=journal)
    return to_terminate, leaving


def wait_until_gone(module: Any, step: TerminateStep, group: NodegroupRef, journal: Journal | None, hooks: list[dict[str, Any]],
                    instance_ids: list[str], started: datetime.datetime, started_clock: float,
                    result: dict[str, Any]) -> None:
    """With ``wait``, until the instances are terminated (through the lifecycle hooks that hold them); with
    ``wait_for_replacements``, until their replacements are Ready nodes (U3), within one wait_timeout (which a
    hook's hold extends)."""
    autoscaling, ec2, name = module.aws("autoscaling"), module.aws("ec2"), group.asg_name
    extension = 0.0
    if step.wait:
        waiter = TerminationWait(ec2, autoscaling, name, hooks)
        waiter.note_retained(group.asg, instance_ids)  # retained before this run: not waited for
        pending = waiter.run(instance_ids, step.wait_timeout)
        result["lifecycle_hook_waits"] = waiter.hook_waits()
        result["retained_instances"] = waiter.retained_instances()
        for warning in retained_warnings(result["retained_instances"], name, result["terminated"],
                                         [i["instance_id"] for i in result.get("never_joined", [])]):
            module.warn(warning)
        if pending:
            raise waiter.timeout_error(pending, name)
        extension = waiter.extension
    if step.wait_for_replacements:
        remaining = max(1.0, step.wait_timeout + extension - (time.time() - started_clock))
        result["replacements"] = wait_for_replacements(
            module, group, [i["InstanceId"] for i in group.asg.get("Instances", [])], instance_ids, started, remaining)
        if journal is not None and journal.scale_in_protection == SCALE_IN_PROTECTION_OURS:
            # The replacements hold no pods yet but will: protected like every node of the upgrade (item 22).
            set_scale_in_protection(autoscaling, describe_asg(autoscaling, name), True)


class Termination:
    """A termination accepted by Auto Scaling (start_termination) whose wait (finish_termination) is still to come:
    the node_replace action waits for batch k's instances to be gone while it drains batch k+1 (issue 11 item 4).
    What the loop reads of it is typed (the properties below); the module's result (RETURN ``termination``) is
    ``result``, given at the module's boundary (to_result)."""

    def __init__(self, step: TerminateStep, group: NodegroupRef, journal: Journal | None,
                 hooks: list[dict[str, Any]], instance_ids: list[str], started: datetime.datetime,
                 started_clock: float, result: dict[str, Any], changed: bool, diff: dict[str, Any]) -> None:
        self.step = step
        self.group = group
        self.journal = journal
        self.hooks = hooks
        self.instance_ids = instance_ids
        self.started = started
        self.started_clock = started_clock
        self.result = result
        self.changed = changed
        self.diff = diff

    @property
    def never_joined(self) -> list[dict[str, Any]]:
        return self.result["never_joined"]

    @property
    def availability_zones(self) -> dict[str, str]:
        return self.result["availability_zones"]

    @property
    def group_per_az(self) -> dict[str, int]:
        return self.result["group_per_az"]

    @property
    def replacements(self) -> list[dict[str, Any]]:
        return self.result["replacements"]

    @property
    def retained_instances(self) -> list[str]:
        return self.result.get("retained_instances") or []

    def to_result(self, module: Any) -> dict[str, Any]:
        """asg_instance_terminate's result (RETURN), with its diff in diff mode."""
        return module.with_diff(dict(changed=self.changed, termination=self.result), **self.diff)


def zones_of(asg: Mapping[str, Any], instance_ids: Sequence[str]) -> dict[str, Any]:
    """Where ``instance_ids`` run (availability_zones, by instance) and the group's instances per AZ that are not
    terminating (group_per_az), as the group was read before their termination: the report's timeline."""
    instances = [i for i in asg.get("Instances", []) if not i.get("LifecycleState", "").startswith("Terminat")]
    per_az = {}
    for instance in instances:
        per_az[instance["AvailabilityZone"]] = per_az.get(instance["AvailabilityZone"], 0) + 1
    wanted = set(instance_ids)
    return dict(availability_zones=dict((i["InstanceId"], i["AvailabilityZone"]) for i in asg.get("Instances", [])
                                        if i["InstanceId"] in wanted), group_per_az=per_az)


def start_termination(module: Any, step: TerminateStep, hooks: list[dict[str, Any]] | None = None) -> Termination:
    """Everything asg_instance_terminate does up to Auto Scaling accepting the terminations: checks (U5, C3),
    the lease, TerminateInstanceInAutoScalingGroup and the journal. Nothing is waited for yet. ``hooks``: the
    group's termination lifecycle hooks when the caller read them (termination_hooks), else read here."""
    started_clock = time.time()
    started = utc_now()
    validate_params(step)
    autoscaling = module.aws("autoscaling")
    ec2 = module.aws("ec2")
    group = find_nodegroup(autoscaling, module.aws("eks"), step.cluster_name, step.nodegroup_name, step.asg_name)
    group.refuse_if_managed("terminate instances through its Auto Scaling group")
    asg, name, journal = group.asg, group.asg_name, group.journal()
    to_terminate, leaving = classify_instances(ec2, asg, list(step.instance_ids))

    before = asg_sizes(asg)
    # SPEC C3, issue 10 items 22 and 24: someone else set the desired capacity during the upgrade; stop at this
    # batch, before any change, not at the scale-down after every old node was replaced (or accept it, item 23).
    journal = check_capacity_unmoved(module, autoscaling, asg, journal)
    # Issue 29 item 4: the replacements of a group set back to another version would be old nodes.
    check_launch_template_unmoved(ec2, asg, journal)
    after = sizes_after(before, len(to_terminate) if step.decrement else 0, journal, name)
    result = dict(asg_name=name, terminated=to_terminate, already_terminated=sorted(leaving), before=before,
                  after=after, replacements=[], **zones_of(asg, to_terminate))
    diff = dict(before=dict(before, instance_ids=sorted(i["InstanceId"] for i in asg.get("Instances", []))),
                after=dict(after, instance_ids=sorted(i["InstanceId"] for i in asg.get("Instances", [])
                                                      if i["InstanceId"] not in to_terminate)))
    result["never_joined"] = check_drained(module, group, to_terminate, step.node_ready_timeout)
    # Read once, before anything changes (an AccessDenied here changes nothing): the hooks that may hold the
    # instances in Terminating:Wait (issue 10 item 14).
    if not (step.wait and (to_terminate or leaving)):
        hooks = []
    elif hooks is None:
        hooks = termination_hooks(autoscaling, name)
    result["lifecycle_hooks"] = hooks
    result["lifecycle_hook_waits"] = []
    if to_terminate or journal is not None:
        claim(module, autoscaling, asg)
    if not module.check_mode:
        to_terminate, leaving = terminate(module, step.decrement, group, journal, to_terminate, leaving, before,
                                          after, result)
    return Termination(step, group, journal, [] if module.check_mode else hooks,
                       [] if module.check_mode else to_terminate + leaving, started, started_clock, result,
                       bool(to_terminate), diff)


def finish_termination(module: Any, termination: Termination) -> Termination:
    """The wait start_termination left (wait, wait_for_replacements); returns ``termination``, waited for."""
    termination.result.setdefault("retained_instances", [])
    if not module.check_mode:
        wait_until_gone(module, termination.step, termination.group, termination.journal, termination.hooks,
                        termination.instance_ids, termination.started, termination.started_clock,
                        termination.result)
    termination.result["elapsed_seconds"] = round(time.time() - termination.started_clock, 1)
    return termination


def run(module: Any) -> dict[str, Any]:
    """asg_instance_terminate's work for the module: its options typed once (TerminateStep), its result (RETURN)."""
    step = TerminateStep.from_params(module.params)
    return finish_termination(module, start_termination(module, step)).to_result(module)
