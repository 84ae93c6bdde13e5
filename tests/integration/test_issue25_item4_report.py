# -*- coding: utf-8 -*-
# Copyright: Contributors to the eksops.nodegroup project
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Issue 25 item 4, what an operator reads and sees, on the sandbox through the upgrade playbook: the preflight's
stop on warnings as a playbook variable, the per-batch times and waits of the JSON report, the picture written
beside it (upgrade-report.svg, named by the summary) and the pods' warnings printed with their batch."""

from __future__ import annotations

import json
import re
import xml.etree.ElementTree as ET

from nodegroup_state import workers_asg
from sandbox_helpers import REPO_ROOT, module_sandbox, run_playbook
from scenarios import two_az_workers

# The cache's emptyDir is a pod warning of its node's drain; billing's single replica a preflight warning.
SMALL = two_az_workers("picture", 6, [{"kind": "Deployment", "name": "web", "replicas": 2, "pdb": {"max_unavailable": 1}},
                                      {"kind": "Deployment", "name": "cache", "replicas": 2, "empty_dir": True},
                                      {"kind": "Deployment", "name": "billing", "replicas": 1}])
SVG = "{http://www.w3.org/2000/svg}"


small_sandbox = module_sandbox(SMALL)


def upgrade(sandbox, report_path, **extra):
    return run_playbook(sandbox, REPO_ROOT / "playbooks" / "upgrade_nodegroup.yml", dict({
        "cluster_name": "picture", "nodegroup_name": "workers", "kubernetes_version": "1.30",
        "drain_timeout": 30, "post_drain_wait": 1, "upgrade_report_path": str(report_path)}, **extra))


def test_issue25_item4_fail_on_preflight_warnings_is_a_playbook_variable_that_stops_before_any_change(
        small_sandbox, tmp_path):
    version = workers_asg(small_sandbox)["LaunchTemplate"]["Version"]
    result = upgrade(small_sandbox, tmp_path / "upgrade-report.json", fail_on_preflight_warnings=True)
    assert result.returncode != 0, result.stdout[-3000:]
    error = json.loads((tmp_path / "upgrade-report.json").read_text())["error"]
    assert (error["phase"], error["code"]) == ("setup", "InvalidParameter"), error
    assert "fail_on_preflight_warnings is true; nothing was changed" in error["msg"]
    assert workers_asg(small_sandbox)["LaunchTemplate"]["Version"] == version


def test_issue25_item4_a_run_writes_its_batches_times_and_picture_and_prints_warnings_with_their_batch(
        small_sandbox, tmp_path):
    report_path = tmp_path / "upgrade-report.json"
    result = upgrade(small_sandbox, report_path)
    assert result.returncode == 0, result.stdout[-3000:]
    report = json.loads(report_path.read_text())
    assert [b["batch"] for b in report["batches"]] == [1, 2]
    for batch in report["batches"]:
        assert batch["started_at"] < batch["drained_at"] < batch["termination_accepted_at"] <= batch["terminated_at"]
        assert batch["waited_on"] and batch["pods_evicted"] > 0
        assert set(batch["availability_zones"]) == set(batch["instance_ids"])
    lanes = [lane["availability_zone"] for lane in report["timeline"]["availability_zones"]]
    assert lanes == ["us-west-2a", "us-west-2b"]
    for lane in report["timeline"]["availability_zones"]:
        assert (lane["counts"][0]["old"], lane["counts"][-1]["old"]) == (1, 0), lane
    picture = tmp_path / "upgrade-report.svg"
    svg = ET.fromstring(picture.read_text())
    assert [g.get("data-availability-zone") for g in svg.iter(SVG + "g") if g.get("class") == "lane"] == lanes
    assert "Timeline of the upgrade (open it in a browser): %s" % picture in result.stdout
    # The cache's emptyDir warning is printed as its batch drains, before the batch's end line.
    warned = re.search(r"^batch (\d)/2: node \S+: \S*cache\S*: pod with emptyDir data", result.stdout, re.M)
    assert warned, result.stdout[-5000:]
    assert result.stdout.index(warned.group(0)) < result.stdout.index("batch %s/2 ended" % warned.group(1))
