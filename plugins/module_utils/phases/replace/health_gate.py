# -*- coding: utf-8 -*-
# Copyright: Contributors to the eksops.nodegroup project
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""node_replace's soak, health gate, canary (issue 27 item 1) and zone order (item 7): after a batch ended and its
instances are gone, wait ``batch_soak_seconds`` (after the canary, ``canary_soak_seconds``), then go on only once
the workloads the batch's drain moved are healthy again (plan/workload_health.py judges), within
``health_gate_timeout``; otherwise HealthGateFailed, naming each workload and why. The canary's last batch and,
with ``batch_order: zone``, each zone's last batch are gated whatever the soak.

A failed gate is remembered (GateRecord): the journal records the workloads it left unhealthy, and a rerun judges
them again before anything else of its phase (judged_again_first: before the safe point of its first batch and the
cordon of every old node), with the loop's gate or, when the rerun gates no batch, one of health_gate_timeout:
passed, the record is cleared and the run goes on; failed, HealthGateFailed again, and nothing more is cordoned or
drained. A record whose workloads cannot be judged (none of their names fit a tag value, only their count) is
cleared, with a warning.

The reads, per namespace the batch touched: one pod list, and one Deployment or StatefulSet list when the batch
moved pods of that kind (list_all, retried as every read is, SPEC P3), polled with the house's one wait shape
(host/waiter.py's Waiter) until the verdict holds or the deadline passes. A pod list groups its pods by their
workload as the drain named them (members/returning_pods.workload_of).
"""

from __future__ import annotations

from collections.abc import Callable, Collection, Iterable, Mapping, Sequence
from typing import Any

from ansible_collections.eksops.nodegroup.plugins.module_utils.errors import HEALTH_GATE_FAILED, UpgradeError, invalid_parameter
from ansible_collections.eksops.nodegroup.plugins.module_utils.host import clock as clocks
from ansible_collections.eksops.nodegroup.plugins.module_utils.host.clients import Clients
from ansible_collections.eksops.nodegroup.plugins.module_utils.host.waiter import Backoff, Waiter
from ansible_collections.eksops.nodegroup.plugins.module_utils.kube.client import apps_v1, translate_k8s_errors
from ansible_collections.eksops.nodegroup.plugins.module_utils.kube.watch import list_all
from ansible_collections.eksops.nodegroup.plugins.module_utils.members.returning_pods import workload_of, workload_ref
from ansible_collections.eksops.nodegroup.plugins.module_utils.nodegroup.discovery import NodegroupRef
from ansible_collections.eksops.nodegroup.plugins.module_utils.nodegroup.journal import (
    MAX_TAG_VALUE_LENGTH,
    read_journal,
    write_journal,
)
from ansible_collections.eksops.nodegroup.plugins.module_utils.phases.replace.loop import Batch
from ansible_collections.eksops.nodegroup.plugins.module_utils.plan.batch_order import canary_batches, zone_batches
from ansible_collections.eksops.nodegroup.plugins.module_utils.plan.quarantine_book import batches_without
from ansible_collections.eksops.nodegroup.plugins.module_utils.plan.workload_health import (
    WorkloadHealth,
    any_batch_gated,
    gate_failure_message,
    parse_ref,
    record_failed_gate,
    recorded_gate,
    unhealthy,
    verdict,
)

# Between two reads of the workloads: 1 s, then up to 5 s (a workload that is slow to come back is read less often).
GATE_BACKOFF = Backoff(1.0, 5.0)
# node_replace's options (issue 27 items 1 and 7), in phases/replace/phase.py's ARGUMENT_SPEC.
GATE_OPTIONS = dict(
    batch_soak_seconds=dict(type="int", default=0),
    health_gate_timeout=dict(type="int", default=600),
    canary=dict(type="bool", default=False),
    canary_soak_seconds=dict(type="int", default=0),
    batch_order=dict(type="str", choices=["random", "zone"], default="random"),
)


class GateRecord:
    """A failed gate in the journal (its health_gate_failed field, tag eksops.nodegroup/health_gate): the workloads
    it left unhealthy, as many as a tag value holds (workload_health.record_failed_gate). ``autoscaling()``: the
    client; ``group()``: the node group as the run last read it, whose journal says what an earlier run recorded."""

    def __init__(self, autoscaling: Callable[[], Any], group: Callable[[], NodegroupRef]) -> None:
        self.autoscaling = autoscaling
        self.group = group

    def recorded(self) -> tuple[list[str], int]:
        """(the workloads an earlier run's failed gate recorded, how many more it could not record)."""
        journal = self.group().journal()
        return recorded_gate(journal.health_gate_failed if journal is not None else None)

    def failed(self, refs: Sequence[str], left_out: int = 0) -> None:
        """``refs`` recorded, and ``left_out`` more an earlier record could not name (counted, not dropped)."""
        self._write(record_failed_gate(refs, MAX_TAG_VALUE_LENGTH, left_out))

    def clear(self) -> bool:
        """The record removed; whether the journal held one."""
        return self._write(None)

    def _write(self, value: str | None) -> bool:
        """The journal as it is now, with ``value`` recorded (None: the record removed); nothing without a journal
        (node_replace run on its own, outside an upgrade: no rerun resumes it). Whether it was written."""
        name = self.group().asg_name
        journal = read_journal(self.autoscaling(), name)
        if journal is None or journal.health_gate_failed == value:
            return False
        write_journal(self.autoscaling(), name, journal.replace(health_gate_failed=value), previous=journal)
        return True


class HealthGate:
    """The soak and gate of each batch (``soak_for``); ``timeout``: health_gate_timeout; ``record``: where a failed
    gate is remembered (None: it is not)."""

    def __init__(self, core: Any, apps: Any, batch_soak: int, timeout: int, canary_soak: int = 0,
                 clock: Any = None, record: GateRecord | None = None) -> None:
        self.core = core
        self.apps = apps
        self.batch_soak = batch_soak
        self.timeout = timeout
        self.canary_soak = canary_soak
        self.clock = clock or clocks.SYSTEM_CLOCK
        self.record = record

    @classmethod
    def of(cls, params: Mapping[str, Any], clients: Clients, record: GateRecord | None = None) -> HealthGate:
        """The gate node_replace's ``params`` ask for."""
        return cls(clients.core_v1(), apps_v1(clients.k8s()), params["batch_soak_seconds"],
                   params["health_gate_timeout"], params["canary_soak_seconds"], record=record)

    def soak_for(self, batch: Batch) -> int | None:
        """The seconds to soak after ``batch`` before its gate, or None when it is not gated: the canary's last
        batch soaks canary_soak_seconds; a zone's last batch (batch_order zone) and a retry of nodes held in
        quarantine (issue 27 item 5: its drain moved pods too) are gated whatever batch_soak_seconds; any other
        batch when batch_soak_seconds is asked. Decided by what the batch is (Batch.ordered, Batch.retry), not by
        its number, which a run's quarantined nodes shift."""
        if batch.gate_after == "canary":
            return self.canary_soak
        return self.batch_soak if self.batch_soak > 0 or batch.gate_after == "zone" or batch.retry else None

    def soak(self, seconds: float) -> None:
        self.clock.sleep(seconds)

    def wait(self, label: str, refs: Sequence[str], left_out: int = 0) -> list[WorkloadHealth]:
        """The verdicts once every workload of ``refs`` is healthy; HealthGateFailed at the deadline, the failing
        ones recorded with ``left_out`` more an earlier record counted without naming them."""
        if not refs:
            return []
        waiter = Waiter(lambda verdicts: not unhealthy(verdicts), self.timeout, self.clock)

        def failed(verdicts: Iterable[WorkloadHealth]) -> UpgradeError:
            failing = unhealthy(verdicts)
            message = gate_failure_message(label, self.timeout, failing)
            try:
                if self.record is not None:
                    self.record.failed([health.ref for health in failing], left_out)
            except UpgradeError as err:
                message += (". The journal could not record them (%s): a rerun does not judge them again before "
                            "its first batch" % err.msg)
            return UpgradeError(HEALTH_GATE_FAILED, message, workloads=[health.ref for health in failing])

        return waiter.poll(lambda: self.read(refs), GATE_BACKOFF, on_timeout=failed)[1]

    def judge_again(self, refs: Sequence[str], left_out: int, progress: Callable[[str], None]) -> None:
        """Before a rerun's first batch: ``refs``, the workloads an earlier run's failed gate recorded (``left_out``
        more it could not), judged again (``wait``); failed, HealthGateFailed names them (recorded again, with the
        count of the others)."""
        started = self.clock.now()
        progress("an earlier run's health gate failed on %d workload(s): judged again (up to %d s) before any "
                 "batch starts: %s%s" % (len(refs), self.timeout, ", ".join(refs), (
                     "; %d more it failed on are not judged again (the journal's tag holds %d characters)"
                     % (left_out, MAX_TAG_VALUE_LENGTH)) if left_out else ""))
        self.wait("Before the first batch, the health gate an earlier run failed, judged again", refs, left_out)
        progress("the health gate an earlier run failed passed after %.1f s: %d workload(s) healthy" % (
            self.clock.now() - started, len(refs)))

    def read(self, refs: Sequence[str]) -> list[WorkloadHealth]:
        """The verdicts of ``refs`` from one pod list per namespace and one list per owner kind they need there."""
        owners, pods = {}, {}
        owner_lists = {"Deployment": self.apps.list_namespaced_deployment,
                       "StatefulSet": self.apps.list_namespaced_stateful_set}
        parsed = [parse_ref(ref) for ref in refs]
        for namespace in sorted(set(ns for _kind, ns, _name in parsed)):
            with translate_k8s_errors("read the workloads of namespace %s for the health gate" % namespace):
                for pod in list_all(self.core.list_namespaced_pod, namespace=namespace)[0]:
                    workload = workload_of(pod)
                    if workload is not None:
                        pods.setdefault(workload_ref(workload), []).append(pod)
                for kind in sorted(set(kind for kind, ns, _name in parsed if ns == namespace and kind in owner_lists)):
                    for owner in list_all(owner_lists[kind], namespace=namespace)[0]:
                        owners["%s %s/%s" % (kind, namespace, owner["metadata"]["name"])] = owner
        return verdict(refs, owners, pods)


def health_gate(params: Mapping[str, Any], clients: Clients, order: Mapping[str, Any],
                record: GateRecord | None = None) -> HealthGate | None:
    """The phase's HealthGate from node_replace's params and the plan's ``order`` (ordered_plan's; None: no batch is
    gated, neither soak, canary batches nor zone ends planned: any_batch_gated), remembering a failure in ``record``."""
    if not any_batch_gated(params["batch_soak_seconds"], bool(order.get("canary_batches")),
                           bool(order.get("zone_ends"))):
        return None
    return HealthGate.of(params, clients, record)


def phase_gates(params: Mapping[str, Any], clients: Clients, order: Mapping[str, Any], check_mode: bool,
                autoscaling: Callable[[], Any], group: Callable[[], NodegroupRef], progress: Callable[[str], None],
                warn: Callable[[str], None]) -> tuple[HealthGate | None, Callable[[], bool]]:
    """(node_replace's HealthGate, None when no batch is gated; the judgment the phase runs first:
    judged_again_first, with that gate or, when the run gates no batch, one of health_gate_timeout), a failed gate
    remembered in the journal (GateRecord over ``autoscaling`` and ``group``). Neither in check mode, which waits
    for nothing."""
    if check_mode:
        return None, lambda: False
    record = GateRecord(autoscaling, group)
    gate = health_gate(params, clients, order, record)
    return gate, lambda: judged_again_first(record, lambda: gate or HealthGate.of(params, clients, record),
                                            progress, warn)


def judged_again_first(record: GateRecord, gate: Callable[[], HealthGate], progress: Callable[[str], None],
                       warn: Callable[[str], None]) -> bool:
    """What an earlier run's failed gate left in ``record``, judged again by ``gate()`` (HealthGate.judge_again).
    node_replace runs it before anything else of the phase, even with no batch left (the scale-down follows): before
    the safe point of its first batch, which then counts from after a judgment of up to health_gate_timeout, and
    before the cordon of every old node, so that a judgment that fails cordons nothing more. Passed, the record is
    removed. A record that names none of its workloads (each name longer than a tag value holds:
    workload_health.record_failed_gate) cannot be judged: it is removed, with a warning. Returns whether the record
    was removed; a failure to remove it is a warning, not the run's failure (the next run reads it again, and judges
    healthy workloads)."""
    refs, left_out = record.recorded()
    if refs:
        gate().judge_again(refs, left_out, progress)
    elif left_out:
        warn("an earlier run's health gate failed on %d workload(s) whose names are longer than the journal's tag "
             "holds (%d characters): this run cannot judge them again, removes the record and goes on (the earlier "
             "run's HealthGateFailed named them)" % (left_out, MAX_TAG_VALUE_LENGTH))
    else:
        return False
    try:
        return record.clear()
    except UpgradeError as err:
        warn("the record of the health gate an earlier run failed could not be removed from the journal (%s): the "
             "next run reads it again" % err.msg)
        return False


def validate_gates(params: Mapping[str, Any]) -> None:
    """The soak, gate and canary options, before any change, naming the parameter."""
    for name, least in (("batch_soak_seconds", 0), ("canary_soak_seconds", 0), ("health_gate_timeout", 1)):
        if params[name] < least:
            raise invalid_parameter(name, "%s must be >= %d, got %d" % (name, least, params[name]))
    zone = params["batch_order"] == "zone"
    for name, asked in (("canary", params["canary"]), ("batch_order", zone)):
        if asked and (params["batches"] is not None or params["steps"] is not None):
            raise invalid_parameter(name, "%s needs the phase planned here, from the group's zones: give neither "
                                    "batches nor steps with it" % name)
    if zone and (params["max_surge"] is not None or params["schedule"] != "eks"):
        # Issue 26 item 2: a surge step's old nodes are taken where its launch landed, so that the group ends with
        # its AZ counts; the schedule once plans each batch's zones from the group's needs (SPEC B1).
        raise invalid_parameter("batch_order", "batch_order zone replaces the old nodes one zone after the other, "
                                "each termination replaced: it takes the rolling strategies with the schedule eks, "
                                "not the surge strategy (max_surge) nor the schedule once")


def ordered_plan(plan: Mapping[str, Any], zone_of: Mapping[str, str | None], canary: bool,
                 batch_order: str, held: Collection[str] = ()) -> dict[str, Any]:
    """``plan`` with its batches in the order asked (plan/batch_order.py) and how: ``canary_batches`` (how many of
    the first batches are the canary's) and ``zone_ends`` (with batch_order zone, the number of each zone's last
    batch). The instances ``held`` in quarantine by an earlier run (issue 27 item 5: retried last, after the plan)
    leave the batches first, so that the canary is chosen and the batches numbered among those the run drains.
    The rolling strategies' canary: one old node per zone, in batches of the plan's batch size; the surge
    strategy's: its first step (its old nodes are chosen where its launch landed, issue 26 item 2, so one per zone
    is not promised). Neither asked: the plan as it is."""
    if not canary and batch_order != "zone":
        return dict(plan)
    if plan["strategy"] == "surge":
        return dict(plan, canary_batches=min(1, len(plan["steps"])))
    kept = batches_without(plan["batches"], held)
    first, rest = canary_batches(kept, zone_of, plan["batch_size"]) if canary else ([], kept)
    batches, zone_ends = list(first), []
    for zone in zone_batches(rest, zone_of, plan["batch_size"]) if batch_order == "zone" else [rest]:
        batches.extend(zone)
        zone_ends.append(len(batches))
    return dict(plan, batches=batches, canary_batches=len(first), zone_ends=zone_ends if batch_order == "zone" else [])
