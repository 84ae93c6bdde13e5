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
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

from ansible_collections.eksops.nodegroup.plugins.module_utils.errors import INVALID_PARAMETER, UpgradeError
from ansible_collections.eksops.nodegroup.plugins.module_utils.gates.safe_points import SafePoints
from ansible_collections.eksops.nodegroup.plugins.module_utils.host.step_context import StepContext
from ansible_collections.eksops.nodegroup.plugins.module_utils.nodegroup.discovery import NodegroupRef, describe_asg
from ansible_collections.eksops.nodegroup.plugins.module_utils.plan.maintenance_window import batch_bound_seconds
from ansible_collections.eksops.nodegroup.plugins.module_utils.phases.replace.loop import Batch, ReplaceState


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


class BatchSafePoint:
    """The safe point before a batch: ``group`` the node group as last read (its Auto Scaling group is read again
    here for a pause request), ``bound`` a batch's batch_bound_seconds without its gate, ``health_gate`` the loop's
    (which batches it soaks and gates, and for how long; None: none)."""

    def __init__(self, safe_points: SafePoints, context: StepContext, group: Callable[[], NodegroupRef | None],
                 bound: Callable[[Batch], int], noun: str, health_gate: Any = None) -> None:
        self.safe_points = safe_points
        self.context = context
        self.group = group
        self.bound = bound
        self.noun = noun
        self.health_gate = health_gate
        # The batch whose safe point was checked last: the one before the cordon of every old node is batch 1's.
        self.checked = None

    def check(self, state: ReplaceState, batch: Batch) -> None:
        """Raise the stop due before ``batch`` (the next of ``state``); in check mode, warn instead."""
        number = len(state.batches) + 1
        if self.checked == number:
            return
        known = self.group()
        asg = describe_asg(self.context.aws("autoscaling"), known.asg_name) if known is not None else None
        gate = self.health_gate
        expected = expected_seconds(state, self.bound(batch), gate.soak_for(batch) if gate is not None else None,
                                    gate.timeout if gate is not None else 0)
        try:
            self.safe_points.check("before %s %d" % (self.noun, number), expected, asg)
        except UpgradeError as stop:
            if not self.context.check_mode or stop.code == INVALID_PARAMETER:
                raise
            # A dry run shows the whole plan, and where the run would stop.
            self.context.warn("a run would stop here: %s" % stop.msg)
        self.checked = number


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
