# -*- coding: utf-8 -*-
# Copyright: Contributors to the eksops.nodegroup project
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""The upgrade phase's batch loop (SPEC U5, U7), run in one process by the node_replace action (issue 11 item 4).

Per batch: drain its nodes (drain_step), have Auto Scaling accept the termination of its instances
(terminate_step.start_termination), then wait for them to be gone (terminate_step.finish_termination). A node's
drain and post-drain wait count against max_unavailable; the EC2 shutdown after Auto Scaling accepted the
termination does not, so with ``overlap`` that wait runs in a thread while the next batch drains, and is joined
before the next batch's termination and before the loop ends. Without it (strategy minimal, U7: the replacement
wait gates the next batch) each batch waits in turn.

What the next batch is and how its instances go is asked per batch of ``next_batch(state)``: the plan's
precomputed batches (planned_batches), the surge strategy's steps (planned_steps), or a planner reading live state.

The steps (drain, start, finish) are given by the caller and answer typed outcomes the loop reads: drain a Drained,
start a handle with the batch's ``never_joined``, ``availability_zones`` and ``group_per_az``, finish that handle
waited for, with its ``replacements`` and ``retained_instances`` (issue 26 item 4). A step that fails raises
StepFailed with the step's result so far (the module's, which the task's result carries). The loop raises
ReplaceFailed with what was done before the failure (ReplaceState).

With a health gate (issue 27 item 1, phases/replace/health_gate.py) a gated batch is followed, once it ended, by
a safe point: the termination wait still under way is joined (its instances are gone), the batch soaks, then the
gate waits for the workloads its drain moved to be healthy again; its failure (HealthGateFailed) stops the loop
before the next batch. The last batch is gated too (the scale-down follows).
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any
import threading

from ansible_collections.eksops.nodegroup.plugins.module_utils.errors import StepFailed, UpgradeError
from ansible_collections.eksops.nodegroup.plugins.module_utils.host import clock as clocks
from ansible_collections.eksops.nodegroup.plugins.module_utils.host.clock import clock_time


class Batch:
    """The instances of one batch and how to terminate them (``decrement_ids``: the instances whose termination
    lowers the desired capacity instead of waiting for a replacement, as the schedule once plans them, SPEC B1;
    ``decrement``, the constructor's shorthand: all of them do; ``at_risk``: the planner could not rule out a
    replacement landing in another Availability Zone than the one that needs it). A surge step (SPEC S3) first
    raises the desired capacity to ``desired_capacity``, launching ``launch`` new nodes; it may have no old
    instance to replace. ``choose_old`` (a surge step's, issue 26 item 2): its old instances are chosen once its
    launch is placed (take), ``count`` of the ``candidates``, from the group's ``end_size`` and the
    ``next_launch`` (placement.surge_step_old); until then it has none. ``retry``: the batch drains nodes held in
    quarantine once more (issue 27 item 5, phases/replace/quarantine.py). Where it stands in the plan's order
    (issue 27 items 1 and 7, set by ``ordered``): ``canary``, one of the canary's batches, and ``gate_after``,
    "canary" for the canary's last batch, "zone" for a zone's last (batch_order zone), else None; the health gate
    (phases/replace/health_gate.HealthGate.soak_for) reads them."""

    def __init__(self, instance_ids: Sequence[str], decrement: bool = False, decrement_ids: Sequence[str] = (),
                 at_risk: bool = False, desired_capacity: int | None = None, launch: int = 0,
                 choose_old: Mapping[str, Any] | None = None) -> None:
        self.instance_ids = list(instance_ids)
        wanted = set(decrement_ids)
        self.decrement_ids = [i for i in self.instance_ids if decrement or i in wanted]
        self.at_risk = at_risk
        self.desired_capacity = desired_capacity
        self.launch = launch
        self.choose_old = choose_old
        self.retry = False
        self.canary = False
        self.gate_after = None

    def ordered(self, number: int, order: Mapping[str, Any] | None) -> Batch:
        """The batch as number ``number`` of a plan ordered as ``order`` says (health_gate.ordered_plan's
        ``canary_batches`` and ``zone_ends``, computed on the batches the run drains); returns it."""
        canary = (order or {}).get("canary_batches", 0)
        self.canary = number <= canary
        self.gate_after = ("canary" if number == canary else
                           "zone" if number in (order or {}).get("zone_ends", ()) else None)
        return self

    @property
    def old_count(self) -> int:
        """How many old instances the batch replaces: a surge step's count until it takes them (choose_old)."""
        return self.choose_old["count"] if self.choose_old is not None else len(self.instance_ids)

    def take(self, instance_ids: Sequence[str]) -> None:
        """A surge step's old instances, chosen once its launch is placed: each termination lowers the desired
        capacity, as every surge step's does (SPEC S3)."""
        self.instance_ids = list(instance_ids)
        self.decrement_ids = list(instance_ids)

    def take_out(self, instance_ids: Iterable[str]) -> None:
        """Issue 27 item 5: instances held in quarantine leave the batch; its other instances go on."""
        out = set(instance_ids)
        self.instance_ids = [i for i in self.instance_ids if i not in out]
        self.decrement_ids = [i for i in self.decrement_ids if i not in out]

    @property
    def decrement(self) -> bool:
        """Whether every termination of the batch lowers the desired capacity (Batch(..., decrement=True))."""
        return bool(self.instance_ids) and len(self.decrement_ids) == len(self.instance_ids)


def termination_rounds(batch: Batch) -> list[tuple[list[str], bool]]:
    """The TerminateInstanceInAutoScalingGroup rounds of ``batch``: (instance ids, decrement), the decrementing
    ones first, so the replacing ones' launches see the decrements done (SPEC B1)."""
    decrementing = [i for i in batch.instance_ids if i in set(batch.decrement_ids)]
    replacing = [i for i in batch.instance_ids if i not in set(batch.decrement_ids)]
    return [(ids, decrement) for ids, decrement in ((decrementing, True), (replacing, False)) if ids]


@dataclass(frozen=True)
class Drained:
    """What a batch's drain step did, as the loop reads it: the nodes drained, by name (each node's record as
    node_drain returns it), the node of each of the batch's instances, when a surge step's new nodes were Ready
    (None: it launched none), the nodes held in quarantine instead (instance id -> node; issue 27 item 5), and
    ``moved``: the records of every node the drain moved pods off, held ones too (None: ``nodes``), whose workloads
    the health gate judges (issue 27 item 1)."""

    nodes: Mapping[str, Mapping[str, Any]]
    instances: Mapping[str, str | None]
    new_nodes_ready: float | None = None
    quarantined: Mapping[str, str] | None = None
    moved: Mapping[str, Mapping[str, Any]] | None = None

    @property
    def workloads(self) -> list[str]:
        """The workloads the drain moved pods of (node_drain's records' workloads), held nodes' too."""
        records = self.moved if self.moved is not None else self.nodes
        return sorted(set(ref for node in records.values() for ref in node.get("workloads") or []))


class ReplaceState:
    """What the loop did: the drain results of the finished batches by node, the instances whose termination
    Auto Scaling accepted, those that never joined (terminated without a drain), those the group retained instead of
    terminating them (Terminating:Retained, termination.TERMINATING_RETAINED), and one record per batch: its
    instances and nodes, the clock times it ``started``, was ``drained``, Auto Scaling ``accepted`` its
    terminations, its instances were ``gone`` and it ``ended``, and where they ran (``availability_zones``,
    ``group_per_az``)."""

    def __init__(self) -> None:
        self.drained_nodes = {}
        self.replaced_instances = []
        self.never_joined = []
        self.retained_instances = []
        self.batches = []
        self.schedule = None
        # SPEC U4: when every old node was cordoned before the first batch, and which ({at, nodes}), else None.
        self.cordoned = None
        # Issue 27 item 5: the nodes held in quarantine (plan/quarantine_book.py Held.to_dict), in the order held.
        self.quarantined = []

    def to_dict(self) -> dict[str, Any]:
        return dict(drained_nodes=dict(self.drained_nodes), replaced_instances=list(self.replaced_instances),
                    never_joined=list(self.never_joined), retained_instances=list(self.retained_instances),
                    batches=[dict(b) for b in self.batches], schedule=self.schedule, cordoned=self.cordoned,
                    quarantined=list(self.quarantined),
                    at_risk_batches=[b["batch"] for b in self.batches if b.get("at_risk")],
                    decrements=sum(len(b.get("decrement_ids") or []) for b in self.batches))


class ReplaceFailed(Exception):
    """The loop stopped on ``error``; ``state`` is what was done before, ``failed_step`` the failing step's result."""

    def __init__(self, error: UpgradeError, state: ReplaceState, failed_step: Mapping[str, Any]) -> None:
        super().__init__(error.msg)
        self.error = error
        self.state = state
        self.failed_step = dict(failed_step)


def planned_batches(batches: Sequence[Sequence[str]], decrement: bool = False,
                    order: Mapping[str, Any] | None = None) -> Callable[[ReplaceState], Batch | None]:
    """next_batch for a precomputed plan: batch k is the plan's k-th, whatever the live state, placed in the
    plan's ``order`` (Batch.ordered)."""
    def next_batch(state: ReplaceState) -> Batch | None:
        done = len(state.batches)
        return Batch(batches[done], decrement).ordered(done + 1, order) if done < len(batches) else None
    return next_batch


def planned_steps(steps: Sequence[Mapping[str, Any]], choose_after_launch: bool = True,
                  order: Mapping[str, Any] | None = None) -> Callable[[ReplaceState], Batch | None]:
    """next_batch for the surge strategy's steps (parallelism.place_surge_steps): step k raises the desired capacity to
    its ``desired_capacity``, launching its ``launch`` new nodes, then as many old instances as its ``instance_ids``
    go, each termination lowering the desired capacity (SPEC S3). Which ones is chosen once the launch is placed
    (Batch.choose_old, issue 26 item 2), among the plan's old instances no step has replaced yet; without
    ``choose_after_launch`` (check mode: nothing is launched) they are the step's ``instance_ids``. ``order``: the
    plan's canary (its first step, Batch.ordered)."""
    # The group's size once the last step's old instances are gone.
    end_size = steps[-1]["desired_capacity"] - len(steps[-1]["instance_ids"]) if steps else 0

    def next_batch(state: ReplaceState) -> Batch | None:
        done = len(state.batches)
        if done == len(steps):
            return None
        step = steps[done]
        if not choose_after_launch:
            return Batch(step["instance_ids"], decrement=True, desired_capacity=step["desired_capacity"],
                         launch=step["launch"]).ordered(done + 1, order)
        replaced = set(state.replaced_instances)
        choose = dict(candidates=[i for planned in steps for i in planned["instance_ids"] if i not in replaced],
                      count=len(step["instance_ids"]), end_size=end_size,
                      next_launch=steps[done + 1]["launch"] if done + 1 < len(steps) else 0)
        return Batch([], decrement=True, desired_capacity=step["desired_capacity"], launch=step["launch"],
                     choose_old=choose).ordered(done + 1, order)
    return next_batch


def canary_first(canary: Sequence[Sequence[str]],
                 then: Callable[[ReplaceState], Batch | None]) -> Callable[[ReplaceState], Batch | None]:
    """next_batch for the canary under a live planner (issue 27 item 1): the ``canary`` batches first, each
    termination replaced by Auto Scaling (EKS's schedule), then ``then``'s batches, planned from the group as the
    canary left it."""
    def next_batch(state: ReplaceState) -> Batch | None:
        done = len(state.batches)
        return Batch(canary[done]).ordered(done + 1, dict(canary_batches=len(canary))) if done < len(canary) \
            else then(state)
    next_batch.then = then
    return next_batch


def _names(ids: Sequence[str], node_names: Mapping[str, str | None]) -> str:
    return ", ".join(node_names.get(i) or "no node" for i in ids) or "no node"


class BackgroundWait:
    """finish(handle) in a thread; join() returns its result or raises its StepFailed."""

    def __init__(self, finish: Callable[[Any], Any], handle: Any, record: dict[str, Any],
                 clock: Callable[[], float]) -> None:
        self.record = record
        self.result = None
        self.failure = None
        self.clock = clock
        # When the wait ended (the instances gone), not when the loop joined it.
        self.done_at = None
        self._thread = threading.Thread(target=self._run, args=(finish, handle), name="eksops-termination-wait")
        self._thread.daemon = True
        self._thread.start()

    def _run(self, finish: Callable[[Any], Any], handle: Any) -> None:
        try:
            self.result = finish(handle)
            self.done_at = self.clock()
        except StepFailed as failure:
            self.failure = failure
        except UpgradeError as err:
            self.failure = StepFailed(err)
        except Exception as err:  # pylint: disable=broad-except
            self.failure = err

    def join(self) -> Any:
        self._thread.join()
        if self.failure is not None:
            raise self.failure
        return self.result


class ReplaceLoop:
    """The batch loop. ``drain(batch)``, ``start(batch)`` and ``finish(handle)`` are the steps (see the module
    docstring); ``progress(line)`` receives one line per batch start and end, and one when a batch's instances are
    gone; ``node_names`` (instance id -> node name, as planned) names the nodes of a batch's start line. ``noun``
    names a batch in those lines (the surge strategy's are steps). A batch with no instance (a surge step that only
    launches) ends after its drain step, which launched its nodes."""

    def __init__(self, drain: Callable[[Batch], Drained], start: Callable[[Batch], Any], finish: Callable[[Any], Any],
                 progress: Callable[[str], None], overlap: bool,
                 node_names: Mapping[str, str | None] | None = None, total: int | None = None,
                 clock: Callable[[], float] | None = None, noun: str = "batch", gate: Any = None) -> None:
        self.drain = drain
        self.start = start
        self.finish = finish
        self.progress = progress
        self.overlap = overlap
        # Kept up to date by a live planner (phases/replace/next_batch.py): the same dict, not a copy.
        self.node_names = node_names if node_names is not None else {}
        self.total = total
        self.clock = clock or clocks.SYSTEM_CLOCK.time
        self.noun = noun
        # The soak and health gate (phases/replace/health_gate.HealthGate), or None: no batch is gated.
        self.gate = gate
        self.state = ReplaceState()
        self.pending = None

    def label(self, record: Mapping[str, Any]) -> str:
        # A live planner (schedule once) may answer more batches than the plan counted: no total then.
        total = self.total if self.total and record["batch"] <= self.total else None
        return "%s %d%s" % (self.noun, record["batch"], "/%d" % total if total else "")

    def run(self, next_batch: Callable[[ReplaceState], Batch | None]) -> ReplaceState:
        try:
            while True:
                batch = next_batch(self.state)
                if batch is None:
                    break
                self.one_batch(batch)
            self.join_pending()
        except (StepFailed, UpgradeError) as err:
            # An UpgradeError outside the steps: next_batch's own reads (a live planner's).
            failure = err if isinstance(err, StepFailed) else StepFailed(err)
            self.abandon_pending(failure)
            raise ReplaceFailed(failure.error, self.state, failure.result) from err
        return self.state

    def one_batch(self, batch: Batch) -> None:
        record = dict(batch=len(self.state.batches) + 1, instance_ids=list(batch.instance_ids),
                      nodes=[self.node_names.get(i) for i in batch.instance_ids], started=self.clock(),
                      decrement_ids=list(batch.decrement_ids), at_risk=batch.at_risk, retry=batch.retry)
        self.state.batches.append(record)
        self.progress("%s started at %s: %s" % (
            self.label(record), clock_time(record["started"]),
            "%s (%s)" % (_names(batch.instance_ids, self.node_names), ", ".join(batch.instance_ids))
            if batch.instance_ids else "%d old node(s), chosen once the launch is placed" % batch.old_count
            if batch.old_count else "no old node, new nodes only"))
        drained = self.drained(record, batch)
        if not batch.instance_ids:
            record["ended"] = self.clock()
            self.progress("%s ended at %s after %.1f s" % (
                self.label(record), clock_time(record["ended"]), record["ended"] - record["started"]))
            self.settle(record, batch, drained.workloads)
            return
        instances = drained.instances
        record["nodes"] = [instances.get(i) for i in batch.instance_ids]
        # The previous batch's instances are gone before this batch's go: one termination wait at a time.
        self.join_pending()
        try:
            handle = self.start(batch)
        except StepFailed as failure:
            # The batch was drained, and what Auto Scaling accepted goes: both are in what the loop did.
            self.state.drained_nodes.update(drained.nodes)
            self.state.replaced_instances.extend(failure.accepted)
            raise
        record["accepted"] = self.clock()
        self.state.drained_nodes.update(drained.nodes)
        self.state.never_joined.extend(handle.never_joined)
        # Where the batch's instances ran and the group per AZ as Auto Scaling accepted their termination: the
        # report's timeline of old and new nodes per AZ.
        record["availability_zones"] = dict(handle.availability_zones)
        record["group_per_az"] = dict(handle.group_per_az)
        if self.overlap:
            self.pending = BackgroundWait(self.finish, handle, record, self.clock)
        else:
            self.finished(record, self.finish(handle))
        record["ended"] = self.clock()
        self.state.replaced_instances.extend(batch.instance_ids)
        self.progress("%s ended at %s after %.1f s: drained %s; Auto Scaling %s %s%s" % (
            self.label(record), clock_time(record["ended"]), record["ended"] - record["started"],
            _names(batch.instance_ids, instances), "accepted the termination of" if self.overlap else "terminated",
            ", ".join(batch.instance_ids),
            " (%d decrement)" % len(batch.decrement_ids) if batch.decrement_ids else ""))
        self.settle(record, batch, drained.workloads)

    def settle(self, record: dict[str, Any], batch: Batch, refs: Sequence[str]) -> None:
        """Issue 27 item 1, after ``batch`` ended, when the gate says it is gated (HealthGate.soak_for): join the
        termination wait (a safe point: its instances are gone), soak, then the health gate on ``refs``, the
        workloads its drain moved (Drained.workloads). Records ``soak_seconds``, ``soak_started``, ``soak_ended``
        and ``gate_passed`` or ``gate_failed``; a failed gate raises StepFailed with HealthGateFailed."""
        soak = self.gate.soak_for(batch) if self.gate is not None else None
        if soak is None:
            return
        self.join_pending()
        refs = list(refs)
        record.update(canary=batch.canary, soak_seconds=soak, workloads=refs,
                      soak_started=self.clock())
        self.progress("%s: %ssoak of %d s started at %s, then the health gate (up to %d s) on %d workload(s)%s" % (
            self.label(record), "canary " if record["canary"] else "", soak, clock_time(record["soak_started"]),
            self.gate.timeout, len(refs), ": %s" % ", ".join(refs) if refs else ""))
        self.gate.soak(soak)
        record["soak_ended"] = self.clock()
        try:
            self.gate.wait(self.label(record), refs)
        except UpgradeError as err:
            record["gate_failed"] = self.clock()
            self.progress("%s: health gate failed at %s: %s not healthy" % (
                self.label(record), clock_time(record["gate_failed"]), ", ".join(err.details.get("workloads") or [])))
            raise StepFailed(err) from err
        record["gate_passed"] = self.clock()
        self.progress("%s: health gate passed at %s after %.1f s: %d workload(s) healthy" % (
            self.label(record), clock_time(record["gate_passed"]), record["gate_passed"] - record["soak_ended"],
            len(refs)))

    def drained(self, record: dict[str, Any], batch: Batch) -> Drained:
        """The batch's drain step (a surge step's launch first); records when it ended (``drained``) and when the
        step's new nodes were Ready (``new_nodes_ready``), and prints the pods' warnings with the batch, as they
        come (failed or not: a failed drain's warnings are its result's)."""
        try:
            output = self.drain(batch)
        except StepFailed as failure:
            self.chosen(record, batch)
            record["drained"] = self.clock()
            self.pod_warnings(record, (failure.result.get("drain") or {}).get("nodes") or {})
            raise
        self.chosen(record, batch)
        record["drained"] = self.clock()
        if output.quarantined:
            record.update(instance_ids=list(batch.instance_ids), decrement_ids=list(batch.decrement_ids),
                          nodes=[self.node_names.get(i) for i in batch.instance_ids],
                          quarantined=sorted(output.quarantined.values()))
        if output.new_nodes_ready is not None:
            record["new_nodes_ready"] = output.new_nodes_ready
        self.pod_warnings(record, output.nodes)
        return output

    def chosen(self, record: dict[str, Any], batch: Batch) -> None:
        """A surge step's old instances, chosen in its drain step once its launch was placed, into its record."""
        if batch.choose_old is not None:
            record.update(instance_ids=list(batch.instance_ids), decrement_ids=list(batch.decrement_ids),
                          nodes=[self.node_names.get(i) for i in batch.instance_ids])

    def pod_warnings(self, record: Mapping[str, Any], nodes: Mapping[str, Mapping[str, Any]]) -> None:
        for name, node in sorted(nodes.items()):
            for warning in node.get("warnings") or []:
                self.progress("%s: node %s: %s" % (self.label(record), name, warning))

    def finished(self, record: dict[str, Any], waited: Any, gone: float | None = None) -> None:
        """``waited``: finish's answer (the batch's replacements and retained instances)."""
        record["gone"] = self.clock() if gone is None else gone
        record["replacements"] = list(waited.replacements)
        self.state.retained_instances.extend(waited.retained_instances)

    def join_pending(self) -> None:
        pending, self.pending = self.pending, None
        if pending is None:
            return
        self.finished(pending.record, pending.join(), pending.done_at)
        self.progress("%s: instances %s gone at %s" % (
            self.label(pending.record), ", ".join(pending.record["instance_ids"]), clock_time(pending.record["gone"])))

    def abandon_pending(self, failure: StepFailed) -> None:
        """After ``failure``, the wait still under way is joined all the same: the phase ends with no thread
        left, and its own failure is said too (the first failure is the one reported)."""
        try:
            self.join_pending()
        except StepFailed as other:
            self.progress("%s: %s (after: %s)" % (self.label(self.state.batches[-1]), other.error.msg,
                                                  failure.error.msg))
