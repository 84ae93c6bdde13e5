# -*- coding: utf-8 -*-
# Copyright: Contributors to the eksops.nodegroup project
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""What node_replace's next batch needs, read while the batch before it waits out its post-drain wait (issue 11
item 4).

Between the termination of batch k and the first eviction of batch k+1 the loop read, in series: the group and its
nodes for the live planner (schedule once), the group again and the batch's nodes for the drain, and the cluster's
load balancers (0.2 s of every batch on the sandbox at N = 30; each a round trip to AWS on a real account). None of
it waits for the termination: when batch k's nodes are empty (the drain's on_emptied), a thread reads the load
balancers and the group's termination lifecycle hooks, and under the schedule once plans batch k+1 ahead
(live_planner.LivePlanner.plan_ahead). Batch k's termination is given those hooks. Batch k+1's drain is given
(drain_step.PreparedDrain) the node group as batch k's termination read it just before Auto Scaling accepted it,
its nodes by instance id as the planner joined them (SPEC K2; an old instance's node does not change), and those
load balancers: its first request is the node's own GET. The post-drain wait is longer than these reads (1 s at
the least in practice); when it is not, the next step waits for them, no longer than it used to. A read that
fails is not used: the step reads for itself, as before. The first batch's reads go while the phase cordons every
old node.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from typing import Any
import threading

from ansible_collections.eksops.nodegroup.plugins.module_utils.steps.node_drain import (
    DrainStep,
    PreparedDrain,
    find_load_balancers,
)
from ansible_collections.eksops.nodegroup.plugins.module_utils.nodegroup.discovery import NodegroupRef
from ansible_collections.eksops.nodegroup.plugins.module_utils.phases.replace.loop import Batch, ReplaceState
from ansible_collections.eksops.nodegroup.plugins.module_utils.nodegroup.termination import termination_hooks

_UNREAD = object()


class ReadAhead:
    """The reads ahead of the loop's batches (see the module docstring). ``context`` is the steps' StepContext,
    ``drain`` the drain step's options (they say whether and where load balancers are looked for); ``planner`` the
    live planner, or None for planned batches."""

    def __init__(self, context: Any, drain: DrainStep, planner: Any = None, group: NodegroupRef | None = None) -> None:
        self.context = context
        self.drain = drain
        self.planner = planner
        self.group = group          # the node group as the last termination read it (or as the phase found it)
        self.balancers = _UNREAD    # the cluster's load balancers, read during the last post-drain wait
        self.hooks = None           # the group's termination lifecycle hooks, read during it
        self._thread = None

    def first(self) -> None:
        """Read for the first batch while every old node is cordoned (the cordon changes nothing read here)."""
        self._start(None)

    def on_emptied(self, batch: Batch) -> Callable[[], None]:
        """The drain's on_emptied for ``batch``: its nodes are empty, their post-drain wait begins."""
        return lambda: self._start(batch)

    def _start(self, batch: Batch | None) -> None:
        self._thread = threading.Thread(target=self._read, args=(batch,), name="eksops-read-ahead")
        self._thread.daemon = True
        self._thread.start()

    def _read(self, batch: Batch | None) -> None:
        """Plan the batch after ``batch`` (the first one for None), read the load balancers and the hooks."""
        try:
            if self.planner is not None and batch is None:
                self.planner.plan_first()
            elif self.planner is not None:
                self.planner.plan_ahead(batch)
            if self.group is not None:
                # Those attached to the group's Auto Scaling group are Auto Scaling's (find_load_balancers).
                self.balancers = find_load_balancers(self.context, self.drain, self.group.asg)
                self.hooks = termination_hooks(self.context.aws("autoscaling"), self.group.asg_name)
        except Exception:  # pylint: disable=broad-except
            # Not used: the next steps read for themselves, and meet the error there if it lasts.
            self.balancers, self.hooks = _UNREAD, None

    def join(self) -> None:
        thread, self._thread = self._thread, None
        if thread is not None:
            thread.join()

    def next_batch(self, next_batch: Callable[[ReplaceState], Batch | None]) -> Callable[[ReplaceState], Batch | None]:
        """``next_batch``, asked once the reads ahead are done."""
        def after_reads(state: ReplaceState) -> Batch | None:
            self.join()
            return next_batch(state)
        return after_reads

    def termination_hooks(self) -> list[dict[str, Any]] | None:
        """The hooks read during the post-drain wait of the batch whose termination starts now (None: not read,
        terminate_step reads them). Each read serves one termination."""
        self.join()
        hooks, self.hooks = self.hooks, None
        return hooks

    def accepted(self, rounds: Sequence[Any]) -> None:
        """Auto Scaling accepted a batch's termination ``rounds`` (terminate_step.Termination, in order)."""
        if rounds:
            self.group = rounds[0].group
        if self.planner is not None:
            self.planner.accepted(rounds)

    def drain_inputs(self, batch: Batch, node_names: Mapping[str, str | None]) -> PreparedDrain | None:
        """What ``batch``'s drain is given (PreparedDrain), or None when something was not read ahead: the drain
        then reads it. Each read serves one batch."""
        balancers, self.balancers = self.balancers, _UNREAD
        instances = dict((instance_id, node_names.get(instance_id)) for instance_id in batch.instance_ids)
        if self.group is None or balancers is _UNREAD or None in instances.values():
            return None
        return PreparedDrain(self.group, instances, balancers)
