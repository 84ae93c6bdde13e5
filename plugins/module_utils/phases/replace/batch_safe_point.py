# -*- coding: utf-8 -*-
# Copyright: Contributors to the eksops.nodegroup project
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""node_replace's safe point before each batch or surge step (issue 27 items 2-4): the job still alive (SPEC W5),
then the run's safe points (gates/safe_points.py: alarms, a pause asked, the maintenance window and the run's time),
for a batch expected to take as long as the longest batch so far, or, before the first, as long as its timeouts
allow (plan/maintenance_window.batch_bound_seconds), plus its soak and health gate when the health gate judges it
(issue 27 item 1: the longest gate wait so far, else the gate's timeout).

A batch that stops there has not started: nothing of it is cordoned, drained or terminated, and the previous
batch's termination wait is joined before the phase ends (ReplaceLoop.run), so the journal says where to go on.

A stop there (a pause, the window or the run's time, an alarm: RELEASING_CODES) gives back the old nodes the run
cordoned and has not replaced yet (SPEC U4 cordons them all before the first drain): a stop may last until the next window,
a week later, and cordoned nodes hold no new pod meanwhile, so pending pods would make a cluster autoscaler grow the
group. No drain is under way at a safe point (the previous batch's drain ended before its terminations were asked
for); its nodes, whose instances are leaving the group, stay cordoned, and so do the nodes held in quarantine and the
surplus nodes of the schedule once (capacity the scale-down removes empty: the others are as many as the group had
before the upgrade). The resumed run cordons the old nodes again before its first drain (phase.cordon_old_nodes).

The group read for a pause request serves the next batch's launch template check too (take_group): one
DescribeAutoScalingGroups per batch, not two.
"""

from __future__ import annotations

from collections.abc import Callable, Collection, Mapping, Sequence
from typing import Any

from ansible_collections.eksops.nodegroup.plugins.module_utils.drain import uncordon_nodes
from ansible_collections.eksops.nodegroup.plugins.module_utils.errors import (
    ALARM_TRIGGERED,
    INVALID_PARAMETER,
    STOPPED_CODES,
    UpgradeError,
)
from ansible_collections.eksops.nodegroup.plugins.module_utils.gates.safe_points import SafePoints
from ansible_collections.eksops.nodegroup.plugins.module_utils.host.step_context import StepContext
from ansible_collections.eksops.nodegroup.plugins.module_utils.members.group_nodes import list_nodegroup_nodes
from ansible_collections.eksops.nodegroup.plugins.module_utils.nodegroup.discovery import (
    NodegroupRef,
    describe_asg,
    find_module_nodegroup,
)
from ansible_collections.eksops.nodegroup.plugins.module_utils.plan.instance_choice import LEAVING_STATES
from ansible_collections.eksops.nodegroup.plugins.module_utils.plan.maintenance_window import batch_bound_seconds
from ansible_collections.eksops.nodegroup.plugins.module_utils.plan.quarantine_book import is_quarantined
from ansible_collections.eksops.nodegroup.plugins.module_utils.steps.nodegroup_abort import run_cordons
from ansible_collections.eksops.nodegroup.plugins.module_utils.phases.replace.loop import Batch, ReplaceState

# The stops of a safe point that give back the old nodes the run cordoned: every stop gates/safe_points.py raises
# there. A pause and the window or the run's time (errors.STOPPED_CODES) end a run that goes on later; an alarm is
# a failure the operator looks into, but raised at the same safe point, with nothing under way: the old nodes are
# the capacity that ran before the upgrade, and a cordon only kept pods off them until their batch, which has not
# started. A failure of a batch's outcome (HealthGateFailed, NodesQuarantined, a drain's PodEvictionFailure) is not
# raised here and changes no cordon: its nodes are what the operator looks at.
RELEASING_CODES = frozenset(STOPPED_CODES + (ALARM_TRIGGERED,))


def expected_seconds(state: ReplaceState, bound: int, soak: int | None, gate_timeout: int) -> float:
    """What the next batch is expected to take: the longest finished batch of this run (its drain to its end), else
    ``bound`` (its timeouts'), and, when the batch is gated (``soak``: its soak, None when it is not), its soak and
    the longest health gate wait so far, else ``gate_timeout``. Each batch's own soak counts, not the canary's."""
    taken = [b["ended"] - b["started"] for b in state.batches if b.get("ended") is not None]
    work = max(taken) if taken else float(bound)
    if soak is None:
        return work
    waits = [b["gate_passed"] - b["soak_ended"] for b in state.batches if b.get("gate_passed") is not None]
    return work + soak + (max(waits) if waits else gate_timeout)


def cordons_to_release(nodes: Sequence[Any], run_id: str | None, drained: Collection[str] = ()) -> list[str]:
    """The names of the nodes a stop gives back, of ``nodes`` (node_view objects of the group's instances that are
    not leaving it): those run ``run_id`` cordoned (nodegroup_abort.run_cordons: not its surplus nodes), except the
    ones held in quarantine, whose cordon is the quarantine (issue 27 item 5), and those this run drained
    (``drained``): their instances go, though a group read just after the termination was asked for may still say
    InService."""
    held = set(node.metadata.name for node in nodes if is_quarantined(node.metadata.labels))
    return [name for name in run_cordons(nodes, run_id) if name not in held and name not in drained]


def released_stop(stop: UpgradeError, names: Sequence[str], failure: UpgradeError | None = None) -> UpgradeError:
    """``stop`` with what it gave back: ``uncordoned_nodes``, said in its message (or why it could not)."""
    details = dict(stop.details, uncordoned_nodes=[] if failure is not None else list(names))
    if failure is not None:
        details["uncordon_error"] = failure.msg
        return UpgradeError(stop.code, "%s The old nodes this run cordoned may stay cordoned until the run resumes: "
                            "uncordoning %s failed: %s" % (stop.msg, ", ".join(names) or "them", failure.msg), **details)
    if not names:
        return UpgradeError(stop.code, stop.msg, **details)
    return UpgradeError(stop.code, "%s %d old node%s this run cordoned and has not replaced yet (%s) %s uncordoned until the "
                        "run resumes, which cordons them again before its next drain." % (
                            stop.msg, len(names), "s" if len(names) > 1 else "", ", ".join(names),
                            "are" if len(names) > 1 else "is"), **details)


class BatchSafePoint:
    """The safe point before a batch: ``group`` the node group as last read (its Auto Scaling group is read again
    here for a pause request), ``bound`` a batch's batch_bound_seconds without its gate, ``health_gate`` the loop's
    (which batches it soaks and gates, and for how long; None: none), ``run_id`` the one the drains mark their
    cordons with (None: a stop gives none back)."""

    def __init__(self, safe_points: SafePoints, context: StepContext, group: Callable[[], NodegroupRef | None],
                 bound: Callable[[Batch], int], noun: str, health_gate: Any = None, run_id: str | None = None) -> None:
        self.safe_points = safe_points
        self.context = context
        self.group = group
        self.bound = bound
        self.noun = noun
        self.health_gate = health_gate
        self.run_id = run_id
        # The batch whose safe point was checked last: the one before the cordon of every old node is batch 1's.
        self.checked = None
        # The Auto Scaling group the last check read, until the batch's drain step takes it (take_group).
        self.asg = None

    def check(self, state: ReplaceState, batch: Batch) -> None:
        """Raise the stop due before ``batch`` (the next of ``state``), the old nodes given back first
        (RELEASING_CODES); in check mode, warn instead."""
        number = len(state.batches) + 1
        if self.checked == number:
            return
        known = self.group()
        self.asg = describe_asg(self.context.aws("autoscaling"), known.asg_name) if known is not None else None
        gate = self.health_gate
        expected = expected_seconds(state, self.bound(batch), gate.soak_for(batch) if gate is not None else None,
                                    gate.timeout if gate is not None else 0)
        try:
            self.safe_points.check("before %s %d" % (self.noun, number), expected, self.asg)
        except UpgradeError as stop:
            if self.context.check_mode and stop.code != INVALID_PARAMETER:
                # A dry run shows the whole plan, and where the run would stop.
                self.context.warn("a run would stop here: %s" % stop.msg)
            elif stop.code in RELEASING_CODES and self.run_id is not None:
                raise self.release(stop, known, state.drained_nodes) from None
            else:
                raise
        self.checked = number

    def take_group(self) -> dict[str, Any] | None:
        """The Auto Scaling group the last check read, once: the batch's drain step checks its launch template on
        it (phase.check_target_unmoved) instead of reading it again. None: taken already, or not read."""
        asg, self.asg = self.asg, None
        return asg

    def release(self, stop: UpgradeError, known: NodegroupRef | None, drained: Collection[str]) -> UpgradeError:
        """``stop``, once the old nodes the run cordoned and has not replaced yet are uncordoned (cordons_to_release;
        ``drained``: the nodes this run drained)."""
        group = known.with_asg(self.asg) if known is not None else find_module_nodegroup(self.context)
        staying = dict(group.asg, Instances=[i for i in group.asg.get("Instances", [])
                                             if i.get("LifecycleState") not in LEAVING_STATES])
        names = []
        try:
            names = cordons_to_release(list_nodegroup_nodes(self.context.core_v1(), group.with_asg(staying)),
                                       self.run_id, drained)
            if names:
                uncordon_nodes(self.context.core_v1(), names, run_id=self.run_id, log=self.context.log)
        except UpgradeError as failure:
            return released_stop(stop, names, failure)
        return released_stop(stop, names)


def gated_batches(next_batch: Callable[[ReplaceState], Batch | None], check_job: Callable[[str], None],
                  safe_point: BatchSafePoint) -> Callable[[ReplaceState], Batch | None]:
    """``next_batch``, with the job checked before a batch is asked for (a cancelled job starts no batch, not even
    its progress line) and the run's safe points (``safe_point``) before the batch it answers starts (none when no
    batch is left: a finished phase is not stopped)."""
    def gated(state: ReplaceState) -> Batch | None:
        check_job("start %s %d" % (safe_point.noun, len(state.batches) + 1))
        batch = next_batch(state)
        if batch is not None:
            safe_point.check(state, batch)
        return batch
    return gated


def batch_bound(params: Mapping[str, Any], drain_timeout: int, post_drain_wait: int) -> Callable[[Batch], int]:
    """batch_bound_seconds with node_replace's timeouts, a surge step's launch counted (its soak and gate are the
    health gate's: BatchSafePoint)."""
    def bound(batch: Batch) -> int:
        launch = params["node_ready_timeout"] if batch.desired_capacity is not None and batch.launch > 0 else 0
        return batch_bound_seconds(drain_timeout, post_drain_wait, params["wait_timeout"], launch)
    return bound
