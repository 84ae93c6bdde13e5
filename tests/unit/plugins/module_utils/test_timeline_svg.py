# -*- coding: utf-8 -*-
# Copyright: Contributors to the eksops.nodegroup project
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""The picture of an upgrade (module_utils/report/timeline_svg.py, issue 25 item 4): a report rendered, then read back as
XML, shows what the report says."""

from __future__ import annotations

import xml.etree.ElementTree as ET

from ansible_collections.eksops.nodegroup.plugins.filter.upgrade_report import upgrade_report
from ansible_collections.eksops.nodegroup.plugins.module_utils.report.timeline_svg import render

from ..filter.test_upgrade_report import START, batch_record, drained, run, setup_result

SVG = "{http://www.w3.org/2000/svg}"


def report_of_three_nodes_in_two_zones():
    instances = [dict(instance_id="i-1", availability_zone="us-east-1a"),
                 dict(instance_id="i-2", availability_zone="us-east-1b"),
                 dict(instance_id="i-3", availability_zone="us-east-1a")]
    return upgrade_report(run(
        setup_result=setup_result(), setup_phase=dict(setup=dict(nodegroup=dict(instances=instances))),
        scale_up_result=dict(surge=2, surge_sizing="per_az",
                             new_nodes=[dict(availability_zone="us-east-1a"), dict(availability_zone="us-east-1b")]),
        upgrade_batches=[batch_record(1, "i-1", "us-east-1a", 100, 150, 151, 170, {"us-east-1a": 3, "us-east-1b": 2}),
                         batch_record(2, "i-2", "us-east-1b", 200, 230, 231, 240, {"us-east-1a": 2, "us-east-1b": 2}),
                         batch_record(3, "i-3", "us-east-1a", 300, 310, 311, 330, {"us-east-1a": 2, "us-east-1b": 1})],
        upgrade_drain_results={"node-i-1": drained(["a/p1", "a/p2"], pdb_wait_seconds=20.0, waited=10.0,
                                                   load_balancers=["web"]),
                               "node-i-2": drained(["a/p3"], ["a/bare"], pdb_wait_seconds=0.0),
                               "node-i-3": drained([], pdb_wait_seconds=0.0)},
        upgrade_cordoned=dict(at=START + 99.5, nodes=["node-i-1", "node-i-2", "node-i-3"])))


def test_issue25_item4_the_picture_has_a_lane_per_az_with_its_nodes_marks_and_counts():
    report = report_of_three_nodes_in_two_zones()
    svg = ET.fromstring(render(report))
    assert svg.tag == SVG + "svg"
    lanes = dict((g.get("data-availability-zone"), g) for g in svg.iter(SVG + "g") if g.get("class") == "lane")
    assert sorted(lanes) == ["us-east-1a", "us-east-1b"]
    for zone in report["timeline"]["availability_zones"]:
        lane = lanes[zone["availability_zone"]]
        for key in ("old", "new"):
            line = next(p for p in lane.iter(SVG + "polyline") if p.get("class") == "count-" + key)
            assert line.get("data-values") == " ".join("%s:%d" % (c["seconds"], c[key]) for c in zone["counts"])
    rows = dict((lane_name, [(g.get("data-batch"), g.get("data-node")) for g in lane.iter(SVG + "g")
                             if g.get("class") == "node"]) for lane_name, lane in lanes.items())
    assert rows == {"us-east-1a": [("1", "node-i-1"), ("3", "node-i-3")], "us-east-1b": [("2", "node-i-2")]}
    # Each node: cordoned, drained, terminating, terminated, its pods moved; the PodDisruptionBudget wait where
    # there was one.
    for lane in lanes.values():
        for row in (g for g in lane.iter(SVG + "g") if g.get("class") == "node"):
            marks = [element.get("class") for element in row]
            assert {"cordon", "drain", "terminating", "terminated", "pods-moved"} <= set(marks)
            batch = report["batches"][int(row.get("data-batch")) - 1]
            assert ("pdb-wait" in marks) == any(w["what"] == "pod_disruption_budget" for w in batch["waited_on"])
            moved = next(element.text for element in row if element.get("class") == "pods-moved")
            assert moved == "%d pod(s) moved" % (batch["pods_evicted"] + batch["pods_deleted_by_force"])
    cordons = [c.find(SVG + "title").text for c in svg.iter(SVG + "circle")]
    assert cordons == ["cordoned at 99.5 s"] * 3
    phases = [r.get("data-phase") for r in svg.iter(SVG + "rect") if r.get("data-phase")]
    assert phases == ["setup", "scale_up", "upgrade", "scale_down"]


def test_issue25_item4_a_run_without_batches_still_renders():
    """A dry run or a failure in the setup phase: no lane, the phases and the outcome only."""
    svg = ET.fromstring(render(upgrade_report(run(setup_result=setup_result()))))
    assert not [g for g in svg.iter(SVG + "g") if g.get("class") == "lane"]
    assert "SUCCEEDED" in "".join(svg.itertext())
