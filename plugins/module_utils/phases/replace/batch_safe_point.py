# -*- coding: utf-8 -*-
# Copyright: Contributors to the eksops.nodegroup project
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""node_replace's safe point before each batch or surge step (issue 27 items 2-4): the job still alive (SPEC W5),
then the run's safe points (gates/safe_points.py: alarms, a pause asked, the maintenance window and the run's time),
for a batch expected to take as long as the longest batch so far, or, before the first, as long as its timeouts
allow (batch_bound_seconds).

A batch that stops there has not started: nothing of it is cordoned, drained or terminated, and the previous
batch's termination wait is joined before the phase ends (ReplaceLoop.run), so the journal says where to go on.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

from ansible_collections.eksops.nodegroup.plugins.module_utils.errors import UpgradeError
from ansible_collections.eksops.nodegroup.plugins.module_utils.gates.safe_points import SafePoints
from ansible_collections.eksops.nodegroup.plugins.module_utils.host.step_context import StepContext
from ansible_collections.eksops.nodegroup.plugins.module_utils.nodegroup.discovery import NodegroupRef, describe_asg
from ansible_collections.eksops.nodegroup.plugins.module_utils.phases.replace.loop import Batch, ReplaceState


def batch_bound_seconds(drain_timeout: int, post_drain_wait: int, termination_timeout: int,
                        node_ready_timeout: int, gate_seconds: int, batch: Batch) -> int:
    """The longest a batch may take before it fails: its drain, the post-drain wait, its termination wait, a surge
    step's launch first (its new nodes Ready within node_ready_timeout), and its soak and health gate after
    (``gate_seconds``, issue 27 item 1)."""
    launch = node_ready_timeout if batch.desired_capacity is not None and batch.launch > 0 else 0
    return launch + drain_timeout + post_drain_wait + termination_timeout + gate_seconds


def expected_seconds(state: ReplaceState, bound: int) -> float:
    """What the next batch is expected to take: the longest finished batch of this run, its soak and health gate
    included, else ``bound``."""
    taken = [max(b.get("gate_passed") or 0, b["ended"]) - b["started"]
             for b in state.batches if b.get("ended") is not None]
    return max(taken) if taken else float(bound)


class BatchSafePoint:
    """The safe point before a batch: ``group`` the node group as last read (its Auto Scaling group is read again
    here for a pause request), ``bound`` a batch's batch_bound_seconds."""

    def __init__(self, safe_points: SafePoints, context: StepContext, group: Callable[[], NodegroupRef | None],
                 bound: Callable[[Batch], int], noun: str) -> None:
        self.safe_points = safe_points
        self.context = context
        self.group = group
        self.bound = bound
        self.noun = noun

    def check(self, state: ReplaceState, batch: Batch) -> None:
        """Raise the stop due before ``batch`` (the next of ``state``); in check mode, warn instead."""
        known = self.group()
        asg = describe_asg(self.context.aws("autoscaling"), known.asg_name) if known is not None else None
        try:
            self.safe_points.check("before %s %d" % (self.noun, len(state.batches) + 1),
                                   expected_seconds(state, self.bound(batch)), asg,
                                   lambda: self.context.aws("cloudwatch"))
        except UpgradeError as stop:
            if not self.context.check_mode:
                raise
            # A dry run shows the whole plan, and where the run would stop.
            self.context.warn("a run would stop here: %s" % stop.msg)


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
    """batch_bound_seconds with node_replace's timeouts; a soak and health gate counted for every batch when any is
    gated (the longer of the soaks)."""
    gated = params["batch_soak_seconds"] > 0 or params["canary"] or params["batch_order"] == "zone"
    gate_seconds = (max(params["batch_soak_seconds"], params["canary_soak_seconds"] if params["canary"] else 0)
                    + params["health_gate_timeout"]) if gated else 0
    return lambda batch: batch_bound_seconds(drain_timeout, post_drain_wait, params["wait_timeout"],
                                             params["node_ready_timeout"], gate_seconds, batch)
