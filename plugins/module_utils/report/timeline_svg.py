# -*- coding: utf-8 -*-
# Copyright: Contributors to the eksops.nodegroup project
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""The picture of an upgrade (issue 25 item 4): the report's timeline drawn as one self-contained SVG file that a
browser opens, written beside the JSON report. Pure: ``render(report)`` returns the document, drawn only from the
report (report/timeline.py builds its ``batches`` and ``timeline``).

Across the page runs time from the run's start. On top, the phases. Then one lane per Availability Zone: the old
nodes (those this run replaced) and the new ones as two step lines, and under them a row per node of the
zone's batches, from its drain's start to its instance gone: the cordon, the PodDisruptionBudget wait, the drain's
end, the termination, and the pods it moved. Every mark carries a <title> a browser shows on hover.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any
import xml.etree.ElementTree as ET

from ansible_collections.eksops.nodegroup.plugins.module_utils.report.timeline import epoch_of

SVG_NS = "http://www.w3.org/2000/svg"
LEFT, RIGHT, WIDTH = 170, 90, 1100
PHASE_TOP, PHASE_HEIGHT = 60, 22
COUNT_HEIGHT, ROW_HEIGHT, LANE_GAP = 70, 18, 24
COLOURS = dict(old="#c0392b", new="#2471a3", drain="#f5b041", pdb="#8e44ad", terminating="#95a5a6",
               cordon="#1c2833", phase="#eaecee", soak="#27ae60")


def _el(parent: ET.Element, tag: str, title: str | None = None, text: str | None = None, **attrs: Any) -> ET.Element:
    element = ET.SubElement(parent, tag, dict((k.rstrip("_").replace("_", "-"), str(v)) for k, v in attrs.items()))
    if title:
        ET.SubElement(element, "title").text = title
    if text is not None:
        element.text = text
    return element


class _Scale:
    """Seconds from the run's start to x."""

    def __init__(self, start: float, seconds: float) -> None:
        self.start = start
        self.seconds = max(seconds, 1.0)

    def x(self, seconds: float) -> float:
        return round(LEFT + (WIDTH - LEFT - RIGHT) * min(max(seconds, 0.0), self.seconds) / self.seconds, 1)

    def at(self, timestamp: str | None) -> float | None:
        return None if timestamp is None else epoch_of(timestamp) - self.start


def _phases(group: ET.Element, scale: _Scale, phases: Sequence[Mapping[str, Any]], bottom: float) -> None:
    for span in phases:
        x0, x1 = scale.x(span["start"]), scale.x(span["end"])
        _el(group, "rect", "phase %s: %s s to %s s" % (span["phase"], span["start"], span["end"]), x=x0, y=PHASE_TOP,
            width=max(x1 - x0, 0.5), height=bottom - PHASE_TOP, fill=COLOURS["phase"], stroke="#fff",
            **{"data-phase": span["phase"]})
        _el(group, "text", text=span["phase"], x=x0 + 3, y=PHASE_TOP + 15, font_size=11)
    for tick in range(6):
        seconds = scale.seconds * tick / 5
        _el(group, "text", text="%.0f s" % seconds, x=scale.x(seconds), y=bottom + 14, font_size=10,
            text_anchor="middle")


def _steps(counts: Sequence[Mapping[str, Any]], key: str, scale: _Scale, top: float, peak: int, end: float) -> str:
    """A step line of counts[key] over time, in the count band of a lane (the new nodes' 2 px lower, so that
    equal counts show both lines)."""
    def y(value: int) -> float:
        return round(top + COUNT_HEIGHT - 9 - (COUNT_HEIGHT - 18) * value / max(peak, 1) + (2 if key == "new" else 0), 1)
    points, last = [], None
    for count in counts:
        if last is not None:
            points.append("%s,%s" % (scale.x(count["seconds"]), y(last)))
        points.append("%s,%s" % (scale.x(count["seconds"]), y(count[key])))
        last = count[key]
    if last is not None:
        points.append("%s,%s" % (scale.x(end), y(last)))
    return " ".join(points)


def _count_band(lane: ET.Element, zone: Mapping[str, Any], scale: _Scale, top: float, end: float) -> None:
    counts = zone["counts"]
    peak = max([max(c["old"], c["new"]) for c in counts] or [1])
    for key in ("old", "new"):
        title = "%s nodes in %s: %s" % (key, zone["availability_zone"], ", ".join(
            "%d at %s s (%s)" % (c[key], c["seconds"], c["event"]) for c in counts))
        _el(lane, "polyline", title, points=_steps(counts, key, scale, top, peak, end), fill="none",
            stroke=COLOURS[key], stroke_width=2, class_="count-%s" % key,
            **{"data-values": " ".join("%s:%d" % (c["seconds"], c[key]) for c in counts)})
    last = counts[-1] if counts else dict(old=0, new=0)
    _el(lane, "text", text="old %d, new %d at the end" % (last["old"], last["new"]), x=8, y=top + 40, font_size=10)


def _node_row(lane: ET.Element, batch: Mapping[str, Any], node: str, scale: _Scale, y: float,
              cordoned: float | None) -> None:
    """One node of a batch: the cordon, the drain (its PodDisruptionBudget wait), the termination."""
    row = _el(lane, "g", class_="node", **{"data-node": node, "data-batch": batch["batch"]})
    # The node's first DNS label (ip-10-0-1-23): the whole name is in the row's marks' titles.
    _el(row, "text", "node %s" % node, text="%d: %s" % (batch["batch"], node.split(".")[0]), x=8, y=y + 12,
        font_size=10)
    start, drained = scale.at(batch["started_at"]), scale.at(batch["drained_at"])
    accepted, gone = scale.at(batch["termination_accepted_at"]), scale.at(batch["terminated_at"])
    if drained is not None:
        _el(row, "rect", "batch %d drained %s from %.1f s to %.1f s: %d pod(s) evicted, %d deleted by force" % (
            batch["batch"], node, start, drained, batch["pods_evicted"], batch["pods_deleted_by_force"]),
            x=scale.x(start), y=y + 3, width=max(scale.x(drained) - scale.x(start), 1), height=ROW_HEIGHT - 6,
            fill=COLOURS["drain"], class_="drain")
    pdb = sum(w["seconds"] for w in batch["waited_on"] if w["what"] == "pod_disruption_budget")
    if pdb:
        _el(row, "rect", "waited %.1f s on PodDisruptionBudgets" % pdb, x=scale.x(start), y=y + ROW_HEIGHT - 6,
            width=max(scale.x(start + pdb) - scale.x(start), 1), height=3, fill=COLOURS["pdb"], class_="pdb-wait")
    if accepted is not None and gone is not None:
        _el(row, "line", "instance terminating from %.1f s to %.1f s" % (accepted, gone), x1=scale.x(accepted),
            x2=scale.x(gone), y1=y + 9, y2=y + 9, stroke=COLOURS["terminating"], stroke_width=3,
            stroke_dasharray="4 2", class_="terminating")
        _el(row, "path", "instance %s terminated at %.1f s" % (", ".join(batch["instance_ids"]), gone),
            d="M%s %s l6 6 m0 -6 l-6 6" % (scale.x(gone) - 3, y + 6), stroke=COLOURS["old"], stroke_width=2,
            class_="terminated")
    _soak_mark(row, batch, scale, y)
    at = cordoned if cordoned is not None else start
    _el(row, "circle", "cordoned at %.1f s" % at, cx=scale.x(at), cy=y + 9, r=3, fill=COLOURS["cordon"],
        class_="cordon")
    moved = batch["pods_evicted"] + batch["pods_deleted_by_force"]
    last = max(t for t in (start, drained, gone) if t is not None)
    _el(row, "text", text="%d pod(s) moved" % moved, x=scale.x(last) + 6, y=y + 12, font_size=9, class_="pods-moved")


def _soak_mark(row: ET.Element, batch: Mapping[str, Any], scale: _Scale, y: float) -> None:
    """Issue 27 item 1: a gated batch's soak and health gate, from the soak's start to the gate's verdict."""
    soak = scale.at(batch.get("soak_started_at"))
    verdict = scale.at(batch.get("gate_passed_at") or batch.get("gate_failed_at") or batch.get("soak_ended_at"))
    if soak is None or verdict is None:
        return
    _el(row, "rect", "%ssoak of %s s from %.1f s, health gate %s at %.1f s (%s)" % (
        "canary " if batch.get("canary") else "", batch.get("soak_seconds"), soak,
        "passed" if batch.get("gate_passed_at") else "failed", verdict, ", ".join(batch.get("gate_workloads") or [])
        or "no workload moved"), x=scale.x(soak), y=y + 7, width=max(scale.x(verdict) - scale.x(soak), 1), height=4,
        fill=COLOURS["soak"], class_="soak")


def _lanes(svg: ET.Element, report: Mapping[str, Any], scale: _Scale, top: float, end: float) -> float:
    cordoned = report["timeline"]["cordoned"] or {}
    for zone in report["timeline"]["availability_zones"]:
        name = zone["availability_zone"]
        rows = [(batch, node) for batch in report["batches"] for i, node in zip(batch["instance_ids"], batch["nodes"])
                if batch["availability_zones"].get(i) == name]
        height = COUNT_HEIGHT + ROW_HEIGHT * len(rows) + 6
        lane = _el(svg, "g", class_="lane", **{"data-availability-zone": name})
        _el(lane, "rect", x=2, y=top, width=WIDTH - 4, height=height, fill="none", stroke="#abb2b9")
        _el(lane, "text", text=name, x=8, y=top + 16, font_size=13, font_weight="bold")
        _count_band(lane, zone, scale, top, end)
        for n, (batch, node) in enumerate(rows):
            _node_row(lane, batch, node, scale, top + COUNT_HEIGHT + ROW_HEIGHT * n,
                      cordoned.get("seconds") if node in (cordoned.get("nodes") or []) else None)
        top += height + LANE_GAP
    return top


def _legend(svg: ET.Element, y: float) -> None:
    items = [("old", "old nodes"), ("new", "new nodes"), ("cordon", "cordoned"), ("drain", "drain"),
             ("pdb", "PodDisruptionBudget wait"), ("terminating", "instance terminating"),
             ("soak", "soak and health gate")]
    for n, (key, words) in enumerate(items):
        _el(svg, "rect", x=8 + 155 * n, y=y, width=12, height=12, fill=COLOURS[key])
        _el(svg, "text", text=words, x=8 + 155 * n + 16, y=y + 10, font_size=11)


def render(report: Mapping[str, Any]) -> str:
    """The picture of ``report`` (the upgrade_report filter's), an SVG document."""
    total = report["total_seconds"] or 0.0
    scale = _Scale(epoch_of(report["started_at"]), total)
    ET.register_namespace("", SVG_NS)
    svg = ET.Element("svg", dict(xmlns=SVG_NS, width=str(WIDTH), font_family="sans-serif"))
    ET.SubElement(svg, "title").text = "Upgrade of node group %s" % report["nodegroup_name"]
    _el(svg, "text", text="Node group %s of cluster %s: %s, %s to %s (%s s)" % (
        report["nodegroup_name"], report["cluster_name"], report["status"].upper(), report["started_at"],
        report["finished_at"], total), x=8, y=22, font_size=15, font_weight="bold")
    _el(svg, "text", text="%d node(s) replaced in %d batch(es); %s pod(s) evicted, %d deleted by force; %s s waiting "
        "on PodDisruptionBudgets" % (len(report["replaced_instances"]), len(report["batches"]),
                                     report["pods_evicted"], len(report["pods_deleted_by_force"]),
                                     report["pdb_wait_seconds"]), x=8, y=42, font_size=12)
    # Drawn first, behind the lanes, once their height is known.
    phases = _el(svg, "g", class_="phases")
    bottom = _lanes(svg, report, scale, PHASE_TOP + PHASE_HEIGHT + 6, total)
    _phases(phases, scale, report["timeline"]["phases"], bottom - LANE_GAP + 4)
    _legend(svg, bottom + 20)
    svg.set("height", str(int(bottom + 44)))
    svg.set("viewBox", "0 0 %d %d" % (WIDTH, int(bottom + 44)))
    return ET.tostring(svg, encoding="unicode") + "\n"
