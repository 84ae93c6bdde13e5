# -*- coding: utf-8 -*-
# Copyright: Contributors to the eksops.nodegroup project
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Issue 27 item 5: undrainable_nodes quarantine in node_replace's loop (the decisions: plan/quarantine_book.py).

A batch's drain that failed only because nodes ran out of drain_timeout with pods held (quarantinable) holds those
nodes: each is labelled eksops.nodegroup/quarantined=true with the reason in an annotation (it stays cordoned, as
every failed drain leaves it, SPEC U5), its instance leaves the batch, which goes on with its other nodes. Held
instances stay in the group: no later batch takes them (the plan's batches are filtered, a surge step chooses among
the others, the live planner of the schedule once counts them as live and not old), and a surge step's desired
capacity counts each old instance its earlier steps did not terminate, so that Auto Scaling never scales in to
reach a size that assumed their termination. Once the source has no batch left, the held nodes are retried in
batches of the batch size, one more drain each (the live planner plans them as any old instance; a planned retry
keeps each one's decrement, a surge step's always decrements). A rerun finds the nodes by their label and retries
them last in the same way.
"""

from __future__ import annotations

from collections.abc import Callable, Collection, Mapping, Sequence
from typing import Any

from ansible_collections.eksops.nodegroup.plugins.module_utils.drain import uncordon_nodes
from ansible_collections.eksops.nodegroup.plugins.module_utils.errors import StepFailed
from ansible_collections.eksops.nodegroup.plugins.module_utils.host.step_context import StepContext
from ansible_collections.eksops.nodegroup.plugins.module_utils.steps.node_drain import DrainOutcome
from ansible_collections.eksops.nodegroup.plugins.module_utils.members.group_nodes import list_all_nodes, patch_node_metadata
from ansible_collections.eksops.nodegroup.plugins.module_utils.phases.replace.loop import Batch, Drained, ReplaceFailed, ReplaceState
from ansible_collections.eksops.nodegroup.plugins.module_utils.phases.replace.next_batch import LivePlanner
from ansible_collections.eksops.nodegroup.plugins.module_utils.plan.quarantine_book import (
    QUARANTINE_LABEL,
    QUARANTINE_LABEL_VALUE,
    QUARANTINE_REASON_ANNOTATION,
    Held,
    QuarantineBook,
    describe_blockers,
    quarantinable,
    reason_annotation,
    with_earlier_evictions,
)


class CarriedOver:
    """The nodes an earlier run held in quarantine, found by their label (instance id -> node name) with one LIST
    read once for the run (SPEC P2), so that the plan's order (health_gate.ordered_plan, issue 27 items 1 and 7) and
    the quarantine see the same nodes; none without undrainable_nodes quarantine. Check mode reads them too: its
    plan leaves them out and retries them last, as the run does (issue 10 item 9), though no drain fails there."""

    def __init__(self, params: Mapping[str, Any], clients: Any) -> None:
        self.active = params["undrainable_nodes"] == "quarantine"
        self.core_v1 = clients.core_v1
        self.labelled: set[str] | None = None

    def __call__(self, node_names: Mapping[str, str | None]) -> dict[str, str]:
        """Those of ``node_names`` (instance id -> node name: the plan's old instances) whose nodes carry the
        quarantine label, narrowed by the label on the server."""
        if not self.active:
            return {}
        if self.labelled is None:
            self.labelled = set(node.metadata.name for node in list_all_nodes(
                self.core_v1(), "%s=%s" % (QUARANTINE_LABEL, QUARANTINE_LABEL_VALUE),
                purpose="list the quarantined nodes"))
        return dict((i, name) for i, name in node_names.items() if name in self.labelled)


def start_quarantine(params: Mapping[str, Any], clients: Any, node_names: Mapping[str, str | None],
                     progress: Callable[[str], None], carried: CarriedOver,
                     run_id: str | None = None) -> tuple[dict[str, Any], Quarantine | None]:
    """(node_replace's params, the run's Quarantine or None): with undrainable_nodes quarantine (``carried``
    active), the nodes of the plan found labelled are carried over (a rerun retries them last), and the plan's
    batches lose them. ``run_id``: the one the drains cordon with (a held node's cordon is undone by it with the
    minimal strategy, gives_back_held_nodes)."""
    if not carried.active:
        return dict(params), None
    surge = params["steps"] is not None
    planned = [step["instance_ids"] for step in params["steps"]] if surge else params["batches"]
    old = set(i for batch in planned for i in batch)
    labelled = carried(dict((i, n) for i, n in node_names.items() if i in old))
    book = QuarantineBook.carried_over(params["max_quarantined_nodes"], labelled)
    if labelled:
        progress("quarantined by an earlier run, retried last: %s" % ", ".join(
            "%s (%s)" % (name, i) for i, name in sorted(labelled.items())))
    quarantine = Quarantine(book, clients.core_v1, progress, surge,
                            params["batch_size"] or max([len(batch) for batch in planned] or [1]),
                            uncordon_run_id=run_id if gives_back_held_nodes(params) else None,
                            old_ids=[i for batch in planned for i in batch] if surge else ())
    return (params if surge else dict(params, batches=quarantine.planned(params["batches"]))), quarantine


def gives_back_held_nodes(params: Mapping[str, Any]) -> bool:
    """Whether node_replace's run gives a held node back to the scheduler (Quarantine's ``uncordon_run_id``): the
    minimal strategy's (wait_for_replacements, SPEC U7: no capacity first, each batch waits for the replacements of
    its terminations, and none comes for a held node), which cordons no old node before its batch
    (cordon_old_nodes). Not the default strategy's, whichever cordon_old_nodes (its scale-up added the room), nor a
    surge step's (it keeps the node it launched; the surge strategy takes no wait_for_replacements)."""
    return params["wait_for_replacements"] and not params["cordon_old_nodes"]


def drained_and_held(quarantine: Quarantine | None, batch: Batch, outcome: DrainOutcome,
                     context: StepContext, ready: float | None) -> Drained:
    """``batch``'s drain as the loop reads it: its drained nodes, and those held in quarantine (issue 27 item 5),
    taken out of the batch; a drained node that was held leaves the quarantine. Its ``moved``: the records of every
    node the drain moved pods off, held ones too (the health gate judges their workloads, issue 27 item 1). A failed
    drain raises StepFailed with the step's result, as node_drain's fail_json gave it (the task's result carries
    it), unless its nodes are held."""
    held = {}
    if outcome.error is not None:
        result = outcome.to_result(context)
        held = quarantine.hold(batch, outcome.failed_codes, outcome.timed_out, result,
                               outcome.instances or {}) if quarantine else None
        if held is None:
            raise StepFailed(outcome.error, result)
    nodes = dict((name, node) for name, node in outcome.nodes.items() if name not in held.values())
    if quarantine is not None:
        nodes = quarantine.released(batch, nodes)
    return Drained(nodes, outcome.instances or {}, ready, held, moved=dict(outcome.nodes, **nodes))


class Quarantine:
    """The quarantine of one node_replace run: ``book`` (the held nodes), ``core_v1()`` the Kubernetes client,
    ``progress`` node_replace's progress lines, ``surge`` whether the batches are the surge strategy's steps,
    ``batch_size`` the size of a retry batch; ``live`` whether the source of batches is the live planner (attach);
    ``old_ids`` the surge plan's old instances in its steps' order (a check-mode step takes a held one's place
    among them, _fill_named).

    ``uncordon_run_id``: a run that cordons no old node before its batch and adds no node for a held one
    (gives_back_held_nodes: the minimal strategy, wait_for_replacements, SPEC U7: no capacity first, and a held
    node's instance is not terminated, so no replacement comes for it) gives a held node back to the scheduler, as
    every old node not yet drained is, by undoing the cordon its drain set with this run id; left cordoned, the room
    it had would be missing for the pods the later batches evict (on a group of two, the other node's drain found
    nowhere to put them, and their budget held that node too). Its retry cordons it again. None: the node stays
    cordoned (the default strategy's scale-up added the room, U2, and with cordon_old_nodes every old node was
    cordoned before the first batch, U4; a surge step keeps the node it launched)."""

    def __init__(self, book: QuarantineBook, core_v1: Callable[[], Any], progress: Callable[[str], None],
                 surge: bool, batch_size: int, uncordon_run_id: str | None = None, old_ids: Sequence[str] = ()) -> None:
        self.book = book
        self.old_ids = list(old_ids)
        self.uncordon_run_id = uncordon_run_id
        book.cordoned = uncordon_run_id is None
        self.core_v1 = core_v1
        self.progress = progress
        self.surge = surge
        self.batch_size = batch_size
        self.live = False
        self.state: ReplaceState | None = None
        self._source_done = False
        self._last: tuple[Batch, int] | None = None
        # Old instances the surge steps so far planned to terminate and did not (held, or none left to choose).
        self.shortfall = 0
        # The last drain record of each node held (node_drain's drain.nodes), for the run's error.
        self.records: dict[str, dict[str, Any]] = {}
        # The result of the drain step that held one more node than max_quarantined_nodes, or None.
        self.exceeded: Mapping[str, Any] | None = None

    def attach(self, source: Callable[[ReplaceState], Batch | None]) -> None:
        """The live planner of the schedule once (``source``, or the one after the canary, loop.canary_first) takes
        no held instance, and counts each as live."""
        planner = getattr(source, "then", source)
        if isinstance(planner, LivePlanner):
            self.live = True
            planner.excluded = lambda: self.book.excluded

    def planned(self, batches: list[list[str]]) -> list[list[str]]:
        """The plan's batches without the instances held now (a rerun's carried over), empty batches dropped."""
        return self.book.without_held(batches)

    def hold(self, batch: Batch, codes: Mapping[str, str | None], timed_out: Collection[str],
             result: Mapping[str, Any], instances: Mapping[str, str | None]) -> dict[str, str] | None:
        """Quarantine the failed nodes of ``batch``'s drain (``codes``: failed node -> code; ``timed_out``: those
        whose drain ran out of drain_timeout, quarantine_book.quarantinable; ``result``: the drain
        step's result, whose drain.nodes are the nodes' records; ``instances``: instance id -> node), or None when
        they are not quarantinable (the drain fails the run). Labels them, takes their instances out of the batch
        and returns them (instance id -> node). When one more is held than max_quarantined_nodes allows, the batch
        still goes on and the run stops before the next (``exceeded``: ``result``, which the error carries)."""
        if not quarantinable(codes, timed_out):
            return None
        nodes = result["drain"]["nodes"]
        number = len(self.state.batches) if self.state is not None else None
        held = dict((i, name) for i, name in instances.items() if name in codes)
        entries = [Held(i, name, decrement=i in batch.decrement_ids, blockers=tuple(nodes[name].get("failed") or ()),
                        batch=number, evicted=tuple(nodes[name].get("evicted") or ()),
                        workloads=tuple(nodes[name].get("workloads") or ()))
                   for i, name in sorted(held.items())]
        for entry in entries:
            patch_node_metadata(self.core_v1(), entry.node, {QUARANTINE_LABEL: QUARANTINE_LABEL_VALUE},
                                {QUARANTINE_REASON_ANNOTATION: reason_annotation(entry)})
            self.records[entry.node] = dict(nodes[entry.node])
        if self.uncordon_run_id is not None:
            uncordon_nodes(self.core_v1(), [entry.node for entry in entries], run_id=self.uncordon_run_id)
        exceeded = self.book.hold(entries)
        self._record()
        for entry in entries:
            retried = self.book.held[entry.instance_id].retried
            self.progress("node %s (%s) quarantined: its drain timed out, held by %s; it %s labelled %s=%s, its "
                          "instance is not terminated%s" % (
                              entry.node, entry.instance_id, describe_blockers(entry.blockers),
                              "stays cordoned and" if self.book.cordoned else
                              "is uncordoned (the run added no node in its place) and",
                              QUARANTINE_LABEL, QUARANTINE_LABEL_VALUE, "" if exceeded or retried
                              else "; retried once every other node is replaced"))
        if exceeded:
            # The batch goes on with its other nodes (drained: they are terminated, not left cordoned and empty);
            # the run stops before its next batch (next_batch).
            self.exceeded = result
        batch.take_out(held)
        return held

    def released(self, batch: Batch, nodes: Mapping[str, Mapping[str, Any]]) -> dict[str, Mapping[str, Any]]:
        """``batch``'s nodes were drained (``nodes``, their drain records): a retried node among them leaves the
        quarantine, its record with the pods its earlier drains evicted. Returns the records."""
        records = dict(nodes)
        for held in self.book.release(batch.instance_ids):
            if held.node in records:
                records[held.node] = with_earlier_evictions(records[held.node], held)
        self._record()
        return records

    def next_batch(self, source: Callable[[ReplaceState], Batch | None]) -> Callable[[ReplaceState], Batch | None]:
        """``source``'s batches (a surge step's sized for the instances held), then the retries. Raises StepFailed
        (NodesQuarantined, with the drain step's result) once a batch held more nodes than max_quarantined_nodes:
        that batch ended, its other nodes replaced, and no next batch starts (not even its safe point's check)."""
        def next_batch(state: ReplaceState) -> Batch | None:
            self.state = state
            if self.exceeded is not None:
                raise StepFailed(self.book.error(exceeded=True), self.exceeded)
            self._count_shortfall()
            batch = None
            if not self._source_done:
                batch = source(state)
                self._source_done = batch is None and not self.live
            if batch is None:
                batch = self._retry(source, state)
            # A surge step's old instances as planned, before _size_step or _fill_named leaves out those held.
            self._last = (batch, batch.old_count) if batch is not None else None
            if batch is not None and not batch.retry:
                batch.take_out(self.book.excluded)
                if batch.desired_capacity is not None and batch.choose_old is None:
                    self._fill_named(batch, self._last[1], state)
            if batch is not None and batch.desired_capacity is not None:
                self._size_step(batch)
            return batch
        return next_batch

    def _count_shortfall(self) -> None:
        """The old instances the last surge step planned to terminate and did not: held, or none left to take."""
        if self._last is not None and self._last[0].desired_capacity is not None:
            self.shortfall += self._last[1] - len(self._last[0].instance_ids)

    def _fill_named(self, batch: Batch, count: int, state: ReplaceState) -> None:
        """A check-mode surge step names its old instances (nothing launched to choose them by, loop.planned_steps):
        those held, or taken by an earlier step in their place, are replaced by the plan's next old instances no
        step took, up to its planned ``count``, as a launched step chooses its count among the instances not held
        (_size_step), so that the dry run's steps take as many and its desired capacities are the run's (issue 27
        item 5 review 3)."""
        taken = set(state.replaced_instances)
        batch.take_out(taken)
        taken.update(self.book.excluded, batch.instance_ids)
        more = [i for i in self.old_ids if i not in taken][:max(0, count - len(batch.instance_ids))]
        batch.take(batch.instance_ids + more)

    def _size_step(self, batch: Batch) -> None:
        """A surge step raised by the old instances earlier steps left in the group; its old instances chosen
        among those not held."""
        batch.desired_capacity += self.shortfall
        if batch.choose_old is not None:
            excluded = self.book.excluded
            candidates = [i for i in batch.choose_old["candidates"] if i not in excluded]
            batch.choose_old = dict(batch.choose_old, candidates=candidates,
                                    count=min(batch.choose_old["count"], len(candidates)),
                                    end_size=batch.choose_old["end_size"] + self.shortfall)

    def _retry(self, source: Callable[[ReplaceState], Batch | None], state: ReplaceState) -> Batch | None:
        retry = self.book.next_retry(self.batch_size)
        if not retry:
            return None
        self.progress("retrying quarantined node(s) %s: one more drain each" % ", ".join(
            "%s (%s)" % (h.node, h.instance_id) for h in retry))
        batch = source(state) if self.live else Batch(
            [h.instance_id for h in retry], decrement_ids=[h.instance_id for h in retry if self.surge or h.decrement])
        if batch is not None:
            batch.retry = True
        return batch

    def _record(self) -> None:
        if self.state is not None:
            self.state.quarantined = self.book.entries()

    def finish(self, state: ReplaceState) -> None:
        """After the last batch: the state's quarantined entries; ReplaceFailed (NodesQuarantined, with the held
        nodes' last drain records) when any is held."""
        state.quarantined = self.book.entries()
        error = self.book.error()
        if error is not None:
            held = set(h.node for h in self.book.held.values())
            raise ReplaceFailed(error, state, dict(drain=dict(nodes=dict(
                (name, record) for name, record in self.records.items() if name in held))))
