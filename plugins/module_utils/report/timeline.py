# -*- coding: utf-8 -*-
# Copyright: Contributors to the eksops.nodegroup project
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""The upgrade report's batches and timeline (issue 25 item 4): what each batch of the upgrade phase did and
waited on, with its times, and the old and new nodes per Availability Zone over the run, from the batch records of
node_replace (replace_loop.ReplaceState) and the phases' results. Pure: the report filter calls it; report/timeline_svg.py
draws what it returns.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any
import datetime

# The phases in the order a run goes through them (the role's nodegroup_upgrade_phase values).
PHASE_ORDER = ("setup", "eks_update", "scale_up", "upgrade", "surge_upgrade", "scale_down")


def iso_time(epoch: float | None) -> str | None:
    """A clock time as the report writes it: ISO 8601, UTC, to the millisecond."""
    if epoch is None:
        return None
    moment = datetime.datetime.fromtimestamp(epoch, datetime.timezone.utc)
    return moment.strftime("%Y-%m-%dT%H:%M:%S.") + "%03dZ" % (moment.microsecond // 1000)


def epoch_of(text: str) -> float:
    """The clock time of a report timestamp (started_at's "...:SSZ" or a batch's "...:SS.mmmZ")."""
    layout = "%Y-%m-%dT%H:%M:%S.%fZ" if "." in text else "%Y-%m-%dT%H:%M:%SZ"
    return datetime.datetime.strptime(text, layout).replace(tzinfo=datetime.timezone.utc).timestamp()


def _span(start: float | None, end: float | None) -> float | None:
    return None if start is None or end is None else round(max(0.0, end - start), 1)


def _waited_on(record: Mapping[str, Any], nodes: Sequence[Mapping[str, Any]], replacements: bool) -> list[dict[str, Any]]:
    """What the batch waited on, longest node first within each kind: new nodes Ready (a surge step's launch),
    PodDisruptionBudgets (eviction refused until a budget allowed it), the pods' termination (the rest of the drain:
    evictions sent, pods leaving within their grace period), the load balancers (or the fixed post-drain wait),
    then the instances' termination (with wait_for_replacements: their replacements Ready)."""
    waits = []
    if record.get("new_nodes_ready") is not None:
        waits.append(dict(what="new_nodes_ready", seconds=_span(record["started"], record["new_nodes_ready"])))
    drain_start = record.get("new_nodes_ready") or record["started"]
    pdb = max([node.get("pdb_wait_seconds") or 0.0 for node in nodes] or [0.0])
    post = max([node.get("post_drain_waited_seconds") or 0.0 for node in nodes] or [0.0])
    balancers = sorted(set(lb for node in nodes for lb in node.get("load_balancers") or []))
    if pdb:
        waits.append(dict(what="pod_disruption_budget", seconds=round(pdb, 1)))
    drain = _span(drain_start, record.get("drained"))
    if drain is not None and drain - pdb - post > 0.05:
        waits.append(dict(what="pods_terminating", seconds=round(drain - pdb - post, 1)))
    if post:
        waits.append(dict(what="load_balancer_deregistration" if balancers else "post_drain_wait",
                          seconds=round(post, 1), load_balancers=balancers))
    gone = _span(record.get("accepted"), record.get("gone"))
    if gone:
        waits.append(dict(what="replacements_ready" if replacements else "instances_terminating", seconds=gone))
    # Issue 27 item 1: the soak, then the health gate until it passed or failed.
    if record.get("soak_started") is not None:
        waits.append(dict(what="soak", seconds=_span(record["soak_started"], record.get("soak_ended"))))
        waits.append(dict(what="health_gate", seconds=_span(record.get("soak_ended"),
                                                            record.get("gate_passed", record.get("gate_failed")))))
    return waits


def batch_report(phase: str, record: Mapping[str, Any], drained: Mapping[str, Mapping[str, Any]]) -> dict[str, Any]:
    """One batch of the report: its nodes, times (started, drained, termination accepted, terminated), the pods it
    moved and warned about, and what it waited on (_waited_on)."""
    names = [name for name in record.get("nodes") or [] if name]
    nodes = [drained[name] for name in names if name in drained]
    return dict(
        phase=phase, batch=record["batch"], instance_ids=list(record["instance_ids"]), nodes=names,
        availability_zones=dict(record.get("availability_zones") or {}),
        group_per_az=dict(record.get("group_per_az") or {}),
        started_at=iso_time(record["started"]), new_nodes_ready_at=iso_time(record.get("new_nodes_ready")),
        drained_at=iso_time(record.get("drained")), termination_accepted_at=iso_time(record.get("accepted")),
        terminated_at=iso_time(record.get("gone")),
        pods_evicted=sum(len(node.get("evicted") or []) for node in nodes),
        pods_deleted_by_force=sum(len(node.get("deleted") or []) for node in nodes),
        pod_warnings=["node %s: %s" % (name, warning) for name in names for warning in
                      (drained.get(name) or {}).get("warnings") or []],
        waited_on=_waited_on(record, nodes, bool(record.get("replacements"))),
        # Issue 27 item 5: the nodes the batch held in quarantine instead of replacing them, and whether it drained
        # quarantined nodes once more.
        quarantined=list(record.get("quarantined") or []), retry=bool(record.get("retry")),
        **_soak_and_gate(record),
    )


def _soak_and_gate(record: Mapping[str, Any]) -> dict[str, Any]:
    """Issue 27 item 1: a gated batch's soak and health gate (none for a batch not gated): whether it was the
    canary's, the soak asked, its times, the workloads judged and when the gate passed or failed."""
    if record.get("soak_started") is None:
        return {}
    return dict(canary=bool(record.get("canary")), soak_seconds=record.get("soak_seconds"),
                soak_started_at=iso_time(record["soak_started"]), soak_ended_at=iso_time(record.get("soak_ended")),
                gate_workloads=list(record.get("workloads") or []), gate_passed_at=iso_time(record.get("gate_passed")),
                gate_failed_at=iso_time(record.get("gate_failed")))


def batch_reports(phases: Mapping[str, Sequence[Mapping[str, Any]] | None],
                  drained: Mapping[str, Mapping[str, Any]]) -> list[dict[str, Any]]:
    """Every batch of the phases that ran batches (upgrade, surge_upgrade), in order."""
    return [batch_report(phase, record, drained) for phase in PHASE_ORDER for record in phases.get(phase) or []]


def phase_spans(phase_seconds: Mapping[str, float]) -> list[dict[str, Any]]:
    """The phases that ran, in order, as seconds from the run's start (from, to)."""
    spans, at = [], 0.0
    for phase in sorted(phase_seconds, key=lambda p: PHASE_ORDER.index(p) if p in PHASE_ORDER else len(PHASE_ORDER)):
        spans.append(dict(phase=phase, start=round(at, 1), end=round(at + phase_seconds[phase], 1)))
        at += phase_seconds[phase]
    return spans


def _count(zones: Sequence[str | None]) -> dict[str, int]:
    """Instances per AZ; one whose AZ is not known is left out."""
    counts = {}
    for zone in zones:
        if zone:
            counts[zone] = counts.get(zone, 0) + 1
    return counts


class _Counts:
    """The old and new nodes per AZ as the timeline goes, sampled at each event (seconds from the start)."""

    def __init__(self, zones: Sequence[str], old: Mapping[str, int], new: Mapping[str, int]) -> None:
        self.old = dict((zone, old.get(zone, 0)) for zone in zones)
        self.new = dict((zone, new.get(zone, 0)) for zone in zones)
        self.samples = dict((zone, []) for zone in zones)

    def sample(self, seconds: float, event: str) -> None:
        for zone, samples in self.samples.items():
            samples.append(dict(seconds=round(max(0.0, seconds), 1), old=self.old[zone], new=self.new[zone],
                                event=event))


def _instance_zones(start_instances: Sequence[Mapping[str, Any]], batches: Sequence[Mapping[str, Any]]) -> dict[str, str]:
    zones = dict((i["instance_id"], i.get("availability_zone")) for i in start_instances if i.get("availability_zone"))
    for batch in batches:
        zones.update(batch.get("availability_zones") or {})
    return zones


def az_timeline(run_start: float, start_instances: Sequence[Mapping[str, Any]], batches: Sequence[Mapping[str, Any]],
                old_left: Sequence[str], scale_up: Mapping[str, Any] | None, removed: Sequence[Mapping[str, Any]],
                spans: Sequence[Mapping[str, Any]]) -> list[dict[str, Any]]:
    """Per AZ, the old nodes (the instances this run's batches replaced, and ``old_left``, those a failure left)
    and the new ones (every other instance of the group) over time: at the start (the setup phase's read of the
    group), at the end of the scale-up (its new nodes), as each batch's termination was accepted (the group as Auto
    Scaling then had it) and its instances were gone, and at the end of the scale-down (its surplus removed).
    ``batches``: the report's batches."""
    zones = _instance_zones(start_instances, batches)
    replaced = [i for batch in batches for i in batch["instance_ids"]] + list(old_left)
    started = set(i["instance_id"] for i in start_instances)
    old = _count([zones[i] for i in replaced if i in zones and i in started])
    total = _count([i["availability_zone"] for i in start_instances if i.get("availability_zone")])
    new_nodes = _count([n.get("availability_zone") for n in (scale_up or {}).get("new_nodes") or []])
    names = sorted(set(total) | set(old) | set(z for z in zones.values() if z) | set(new_nodes) | set(
        _count([r.get("availability_zone") for r in removed])))
    counts = _Counts(names, old, dict((zone, total.get(zone, 0) - old.get(zone, 0)) for zone in names))
    counts.sample(0.0, "start")
    ends = dict((span["phase"], span["end"]) for span in spans)
    if scale_up and "scale_up" in ends:
        counts.new.update(new_nodes)
        counts.sample(ends["scale_up"], "scale_up ended")
    for batch in batches:
        if batch["termination_accepted_at"] is not None and batch.get("group_per_az"):
            for zone in names:
                counts.new[zone] = batch["group_per_az"].get(zone, 0) - counts.old[zone]
            counts.sample(epoch_of(batch["termination_accepted_at"]) - run_start,
                          "batch %d termination accepted" % batch["batch"])
        if batch["terminated_at"] is not None:
            for zone in [batch["availability_zones"].get(i) for i in batch["instance_ids"]]:
                if zone in counts.old:
                    counts.old[zone] -= 1
            counts.sample(epoch_of(batch["terminated_at"]) - run_start, "batch %d terminated" % batch["batch"])
    if removed and "scale_down" in ends:
        for zone in [r.get("availability_zone") for r in removed]:
            if zone in counts.new:
                counts.new[zone] -= 1
        counts.sample(ends["scale_down"], "scale_down ended")
    return [dict(availability_zone=zone, counts=sorted(counts.samples[zone], key=lambda c: c["seconds"]))
            for zone in names]
