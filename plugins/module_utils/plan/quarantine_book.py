# -*- coding: utf-8 -*-
# Copyright: Contributors to the eksops.nodegroup project
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Issue 27 item 5 (undrainable_nodes quarantine): what the upgrade phase decides about a node whose drain timed out.
Pure: the phase (phases/replace/quarantine.py) labels the nodes and runs the batches.

As AKS's ``undrainableNodeBehavior: Cordon`` (learn.microsoft.com, UndrainableNodeBehavior: "the blocked nodes will
be cordoned ... will have label kubernetes.azure.com/upgrade-status:Quarantined", bounded by ``maxBlockedNodes``), a
node whose drain ran out of drain_timeout with pods still held (PodEvictionFailure: a PodDisruptionBudget, a pod
that does not go) stays cordoned and labelled, its instance is not terminated, and the run goes on with the other
nodes. Unlike AKS, each such node is drained once more after every other node is replaced (a budget often frees
itself once the workload's other replicas have moved), a rerun finds the nodes by their label and retries them, and
the run's error names every node, pod and budget that still held. A node whose pods were refused before any
eviction (D10: a bare pod, a do-not-disrupt annotation; only force moves them, and no retry would) and a load
balancer that kept a drained node (B3) fail the run as with undrainable_nodes fail.
"""

from __future__ import annotations

from collections.abc import Collection, Iterable, Mapping, Sequence
from dataclasses import dataclass, field, replace
from typing import Any

from ansible_collections.eksops.nodegroup.plugins.module_utils.errors import (
    NODES_QUARANTINED,
    POD_EVICTION_FAILURE,
    UpgradeError,
    invalid_parameter,
)

UNDRAINABLE_NODES = ("fail", "quarantine")
UNDRAINABLE_NODES_DEFAULT = "fail"
MAX_QUARANTINED_NODES_DEFAULT = 1
# The node label a quarantined node carries (a rerun selects the nodes by it) and the annotation that says why.
QUARANTINE_LABEL = "eksops.nodegroup/quarantined"
QUARANTINE_LABEL_VALUE = "true"
QUARANTINE_REASON_ANNOTATION = "eksops.nodegroup/quarantine-reason"
# Kubernetes caps the total size of a node's annotations (256 KiB); the reason says what held, in short.
REASON_MAX_CHARS = 1000


def is_quarantined(labels: Mapping[str, str] | None) -> bool:
    """Whether a node with ``labels`` is held in quarantine."""
    return (labels or {}).get(QUARANTINE_LABEL) == QUARANTINE_LABEL_VALUE


def check_quarantine_options(undrainable_nodes: str, max_quarantined_nodes: int) -> None:
    """Refuse a bad value before any change, naming the parameter."""
    if undrainable_nodes not in UNDRAINABLE_NODES:
        raise invalid_parameter("undrainable_nodes", "undrainable_nodes must be fail or quarantine, got %s"
                                % undrainable_nodes)
    if max_quarantined_nodes < 1:
        raise invalid_parameter("max_quarantined_nodes", "max_quarantined_nodes must be at least 1, got %d"
                                % max_quarantined_nodes)


def quarantinable(codes: Mapping[str, str | None], timed_out: Collection[str]) -> bool:
    """Whether a drain whose failed nodes failed with ``codes`` (node name -> NodeResult code) quarantines them:
    only when every one of them ran out of drain_timeout with pods still held (PodEvictionFailure, and among
    ``timed_out``, NodeResult.timed_out); a refusal before any eviction (code None), a pod refused when it arrived
    during the drain (D10), pods returning to the node (Z3, the drain's fail-fast) or a load balancer's hold fails
    the run."""
    return bool(codes) and all(code == POD_EVICTION_FAILURE and name in timed_out for name, code in codes.items())


def batches_without(batches: Sequence[Sequence[str]], excluded: Collection[str]) -> list[list[str]]:
    """``batches`` without the ``excluded`` instances (held in quarantine), empty ones dropped: the plan's batches
    as the run drains them (QuarantineBook.without_held; health_gate.ordered_plan before it places the canary)."""
    kept = [[i for i in batch if i not in excluded] for batch in batches]
    return [batch for batch in kept if batch]


@dataclass(frozen=True)
class Held:
    """A quarantined node: its ``instance_id`` and ``node``, whether its termination lowers the desired capacity
    (``decrement``, as its batch planned it), the ``blockers`` of its last drain ({pod, reason, pdb}), the ``batch``
    that quarantined it (None: a rerun found it labelled), whether it was ``retried`` in this run, and the pods its
    drains in this run ``evicted`` before they timed out (they moved: the report counts them) and their
    ``workloads`` (the health gate judges them, issue 27 item 1)."""

    instance_id: str
    node: str
    decrement: bool = False
    blockers: tuple[Mapping[str, Any], ...] = ()
    batch: int | None = None
    retried: bool = False
    evicted: tuple[str, ...] = ()
    workloads: tuple[str, ...] = ()

    def to_dict(self) -> dict[str, Any]:
        return dict(instance_id=self.instance_id, node=self.node, batch=self.batch, retried=self.retried,
                    evicted=sorted(self.evicted), pods=[dict(b) for b in self.blockers],
                    pod_disruption_budgets=sorted(set(name for b in self.blockers for name in budgets_of(b))))


def budgets_of(blocker: Mapping[str, Any]) -> list[str]:
    """The PodDisruptionBudgets that held a pod ({pod: namespace/name, pdb: names joined by commas, or None}), each
    as namespace/name: a budget lives in its pod's namespace."""
    namespace = blocker["pod"].split("/")[0]
    return [name if "/" in name else "%s/%s" % (namespace, name)
            for name in (blocker.get("pdb") or "").split(",") if name]


def with_earlier_evictions(record: Mapping[str, Any], held: Held) -> dict[str, Any]:
    """A drain record (node_drain's drain.nodes entry) of a node ``held`` in quarantine earlier in the run, with
    the pods its earlier drains evicted and their workloads: every pod the run moved off the node."""
    return dict(record, evicted=sorted(held.evicted + tuple(record.get("evicted") or ())),
                workloads=sorted(set(held.workloads + tuple(record.get("workloads") or ()))))


def describe_blockers(blockers: Iterable[Mapping[str, Any]]) -> str:
    """The pods that held a node, each with its PodDisruptionBudget(s) when one held it."""
    return ", ".join("%s%s" % (b["pod"], " (PodDisruptionBudget %s)" % ", ".join(budgets_of(b)) if b.get("pdb") else "")
                     for b in sorted(blockers, key=lambda b: b["pod"])) or "no pod named"


def reason_annotation(held: Held) -> str:
    """The reason annotation's value: what held the node's drain, in at most REASON_MAX_CHARS characters."""
    text = "drain timed out in batch %s; held by %s" % (held.batch, describe_blockers(held.blockers))
    return text if len(text) <= REASON_MAX_CHARS else text[:REASON_MAX_CHARS - 3] + "..."


@dataclass
class QuarantineBook:
    """The nodes held in quarantine during one run, in the order they were held, with the bound ``limit``
    (max_quarantined_nodes): the number held at once, carried-over ones included (``carried``: found labelled
    by a rerun, retried last like the others; they never stop a run by themselves). ``cordoned``: whether a held
    node stays cordoned (not when the run added no node in its place: the minimal strategy, SPEC U7)."""

    limit: int
    held: dict[str, Held] = field(default_factory=dict)
    retrying: set[str] = field(default_factory=set)
    cordoned: bool = True

    @classmethod
    def carried_over(cls, limit: int, labelled: Mapping[str, str]) -> QuarantineBook:
        """The book of a rerun: ``labelled`` (instance id -> node name) the group's nodes that carry the label."""
        return cls(limit, dict((i, Held(i, node)) for i, node in sorted(labelled.items())))

    def hold(self, entries: Sequence[Held]) -> bool:
        """Hold ``entries``; whether the bound is now exceeded. A node held again by its retry keeps its place, is
        marked retried (never retried again), keeps the batch that first held it and exceeds nothing: it was
        counted when first held."""
        new = False
        for entry in entries:
            if entry.instance_id in self.retrying:
                self.retrying.discard(entry.instance_id)
                earlier = self.held[entry.instance_id]
                entry = replace(entry, retried=True, batch=earlier.batch, evicted=earlier.evicted + entry.evicted,
                                workloads=earlier.workloads + entry.workloads)
            else:
                new = new or entry.instance_id not in self.held
            self.held[entry.instance_id] = entry
        return new and len(self.held) > self.limit

    def release(self, instance_ids: Iterable[str]) -> list[Held]:
        """Nodes whose retry drained them: they go with their batch. Returns the entries released."""
        released = [self.held.pop(i) for i in instance_ids if i in self.held]
        self.retrying.difference_update(h.instance_id for h in released)
        return released

    def without_held(self, batches: Sequence[Sequence[str]]) -> list[list[str]]:
        """``batches`` without the instances no batch may take now (a rerun's carried over), empty ones dropped."""
        return batches_without(batches, self.excluded)

    @property
    def excluded(self) -> set[str]:
        """The instances no batch may take now: held and not being retried."""
        return set(self.held) - self.retrying

    def next_retry(self, size: int) -> list[Held]:
        """Up to ``size`` held nodes not yet retried, in the order they were held, now being retried (one more
        drain each); none when every one was."""
        chosen = [h for h in self.held.values() if not h.retried and h.instance_id not in self.retrying][:max(1, size)]
        self.retrying.update(h.instance_id for h in chosen)
        return chosen

    def entries(self) -> list[dict[str, Any]]:
        return [h.to_dict() for h in self.held.values()]

    def error(self, exceeded: bool = False) -> UpgradeError | None:
        """NodesQuarantined naming every held node with its pods and budgets (None when none is held): after the
        retries, or when ``exceeded``, before the next batch (the node that exceeded the bound stays cordoned and
        labelled)."""
        if not self.held:
            return None
        names = ", ".join("node %s (%s): %s" % (h.node, h.instance_id, describe_blockers(h.blockers))
                          for h in self.held.values())
        label = "labelled %s=%s" % (QUARANTINE_LABEL, QUARANTINE_LABEL_VALUE)
        kept = "cordoned and " + label if self.cordoned else label + " (uncordoned: the run added no node in its place)"
        if exceeded:
            lead = ("%d nodes are quarantined, more than max_quarantined_nodes %d: the run stopped before its next "
                    "batch, the other nodes of the batch that held the last one replaced; every quarantined node "
                    "stays %s, its instance not terminated" % (len(self.held), self.limit, kept))
        else:
            lead = ("%d node(s) still held after one more drain each, once every other node was replaced: they stay "
                    "%s, their instances not terminated" % (len(self.held), kept))
        budgets = sorted(set(name for h in self.held.values() for b in h.blockers for name in budgets_of(b)))
        return UpgradeError(
            NODES_QUARANTINED,
            "%s. Held by: %s. Free what holds them (the PodDisruptionBudget, the pod), then rerun: the rerun retries "
            "them; force=true deletes the pods instead." % (lead, names),
            failed_nodes=[h.node for h in self.held.values()], quarantined=self.entries(),
            pod_disruption_budgets=budgets, max_quarantined_nodes_exceeded=exceeded)
