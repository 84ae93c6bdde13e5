# -*- coding: utf-8 -*-
# Copyright: Contributors to the eksops.nodegroup project
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Issue 27 item 5 in a dry run: what undrainable_nodes quarantine would do, read-only, for the plan a person reads
(role nodegroup_upgrade's dry run, filter quarantine_preview). Pure.

A dry run shows the real plan (issue 10 item 9): the old nodes an earlier run quarantined (their label) are left
out of the batches and retried last, as node_replace's phases/replace/quarantine.py does; the nodes the preflight
finds held by a PodDisruptionBudget that never allows an eviction (SPEC Z3) would run out of drain_timeout and be
quarantined instead of failing the run; those whose pods are refused before any eviction (a do-not-disrupt
annotation, a pod without a controller, a pod under several budgets: D10, issue 27 item 6) fail the run all the
same; and the batch where one more node than max_quarantined_nodes would be held stops the run. The bound is the
run's own (QuarantineBook.hold), walked over the plan's batches in their order.

Those batches are the run's only when it drains the plan's batches as they are (schedule eks, no canary, batch
order random, the rolling strategies). Otherwise (issue 27 item 5 review 4) the run draws its own: the schedule
once's live planner draws each batch from the group without the quarantined nodes (the plan drew them with them),
a surge step chooses its old nodes where its launch landed, a canary or batch_order zone reorders the batches. The
preview then says "about batch N", and names the nodes, for the run may reach them in another batch.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from typing import Any

from ansible_collections.eksops.nodegroup.plugins.module_utils.plan.quarantine_book import (
    QUARANTINE_LABEL,
    QUARANTINE_LABEL_VALUE,
    Held,
    QuarantineBook,
    is_quarantined,
)

# nodegroup_preflight's checks whose pods hold a drain until drain_timeout runs out (the run quarantines the node),
# and those whose pods are refused before any eviction (the run fails, quarantine or not, unless force).
HELD_UNTIL_TIMEOUT = frozenset(["blocking_pdb"])
REFUSED_AT_ONCE = frozenset(["do_not_disrupt", "unmanaged_pod", "multiple_pdbs"])


def _batch(number: int, approximate: bool) -> str:
    return ("about batch %d" if approximate else "batch %d") % number


def _named(entries: Iterable[Mapping[str, Any]], approximate: bool = False) -> str:
    return ", ".join("%s (%s%s)" % (e["node"], e["instance_id"], "; %s; %s" % (
        _batch(e["batch"], approximate), ", ".join(e["by"])) if "by" in e else "") for e in entries)


def _causes(findings: Iterable[Mapping[str, Any]], checks: frozenset[str]) -> dict[str, list[str]]:
    """Node name -> the objects of ``findings`` (of ``checks``) that concern it, as Kind namespace/name."""
    causes: dict[str, set[str]] = {}
    for finding in findings:
        if finding["check"] in checks:
            for node in finding.get("nodes") or ():
                causes.setdefault(node, set()).add("%s %s/%s" % (finding["kind"], finding["namespace"], finding["name"]))
    return dict((node, sorted(refs)) for node, refs in causes.items())


def quarantine_preview(batches: Sequence[Sequence[str]], instances: Iterable[Mapping[str, Any]],
                       findings: Iterable[Mapping[str, Any]], limit: int, force: bool, drain_timeout: int,
                       approximate: bool = False) -> dict[str, Any]:
    """``batches``: the plan's (instance ids, in their order); ``instances``: nodegroup_info's (instance_id,
    node_name, labels); ``findings``: the preflight's (each with its ``nodes``); ``limit``: max_quarantined_nodes;
    ``approximate``: whether the run draws its own batches (the lines then say "about batch N").
    Returns ``batches`` without the instances an earlier run quarantined, ``carried`` (those, retried last),
    ``held`` (expected quarantined, each with its ``batch`` and what holds it, ``by``) and ``refused`` (expected to
    fail the run), both up to the batch the run would stop in, ``exceeded_batch`` / ``failed_batch`` (that batch,
    or None), ``held_at_once`` (the most nodes held, carried ones included) and ``lines``."""
    old = set(i for batch in batches for i in batch)
    names = dict((i["instance_id"], i["node_name"]) for i in instances if i["instance_id"] in old)
    labelled = set(i["instance_id"] for i in instances if i["instance_id"] in old and is_quarantined(i.get("labels")))
    book = QuarantineBook.carried_over(limit, dict((i, names[i]) for i in labelled))
    carried = [dict(instance_id=h.instance_id, node=h.node) for h in book.held.values()]
    kept = book.without_held(batches)
    held_by, refused_by = ({}, {}) if force else (_causes(findings, HELD_UNTIL_TIMEOUT), _causes(findings, REFUSED_AT_ONCE))
    held, refused, stop = [], [], dict(exceeded_batch=None, failed_batch=None)
    # The batches in their order, up to the one the run would stop in: a refusal fails the drain whatever else its
    # batch holds (quarantinable), else the batch's held nodes count against the bound.
    for number, batch in enumerate(kept, 1):
        refused.extend(dict(instance_id=i, node=names[i], batch=number, by=refused_by[names[i]])
                       for i in batch if names.get(i) in refused_by)
        if refused:
            stop["failed_batch"] = number
            break
        entries = [dict(instance_id=i, node=names[i], batch=number, by=held_by[names[i]])
                   for i in batch if names.get(i) in held_by]
        held.extend(entries)
        if book.hold([Held(e["instance_id"], e["node"]) for e in entries]):
            stop["exceeded_batch"] = number
            break
    preview = dict(batches=kept, carried=carried, held=held, refused=refused, held_at_once=len(book.held), **stop)
    preview["lines"] = preview_lines(preview, limit, force, drain_timeout, approximate)
    return preview


def preview_lines(preview: Mapping[str, Any], limit: int, force: bool, drain_timeout: int,
                  approximate: bool = False) -> list[str]:
    """The preview for a person: one line each for the carried, held and refused nodes and where the run stops,
    naming the nodes and their batches ("about batch N" when ``approximate``)."""
    lines = []
    if preview["carried"]:
        lines.append("quarantine: held by an earlier run (labelled %s=%s), left out of the batches above and drained "
                     "once more after every other node: %s."
                     % (QUARANTINE_LABEL, QUARANTINE_LABEL_VALUE, _named(preview["carried"])))
    if force:
        lines.append("quarantine: with force a budget's pods are deleted once drain_timeout (%d s) runs out and "
                     "pods that ask not to be disrupted are evicted: no other node is expected to be quarantined."
                     % drain_timeout)
    if preview["held"]:
        lines.append("quarantine: the preflight finds a PodDisruptionBudget that never allows an eviction on %s: "
                     "each drain would run out of drain_timeout (%d s) and its node be quarantined (labelled, its "
                     "instance kept) instead of failing the run, and drained once more after every "
                     "other node; a node still held then ends the run with NodesQuarantined."
                     % (_named(preview["held"], approximate), drain_timeout))
    if preview["refused"]:
        lines.append("quarantine does not wait out pods refused before any eviction, on %s: that drain would fail "
                     "the run with PodEvictionFailure in %s unless force."
                     % (_named(preview["refused"], approximate), _batch(preview["failed_batch"], approximate)))
    if preview["exceeded_batch"] is not None:
        nodes = [dict(node=e["node"], instance_id=e["instance_id"])
                 for e in preview["held"] if e["batch"] == preview["exceeded_batch"]]
        lines.append("quarantine: %s would hold one node more than max_quarantined_nodes %d (%s held there): the run "
                     "would stop with NodesQuarantined once that batch's other nodes are replaced%s."
                     % (_batch(preview["exceeded_batch"], approximate), limit, _named(nodes),
                        " (the run draws its own batches: it may reach these nodes in another one)" if approximate
                        else ""))
    elif preview["held_at_once"]:
        lines.append("quarantine: at most %d node(s) held at once, within max_quarantined_nodes %d."
                     % (preview["held_at_once"], limit))
    return lines or ["quarantine: no node held by an earlier run, and the preflight finds none a drain would time "
                     "out on."]
