# -*- coding: utf-8 -*-
# Copyright: Contributors to the eksops.nodegroup project
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Issue 27 item 7 on the sandbox, through the upgrade playbook: batch_order zone replaces the old nodes one
Availability Zone after the other, in batches that never mix zones, and gates the last batch of each zone (the
health gate, even without a soak); the schedule once gives way to eks, saying so."""

from __future__ import annotations

import json

from sandbox_helpers import REPO_ROOT, module_sandbox, run_playbook
from scenarios import two_az_workers

WEB = {"kind": "Deployment", "name": "web", "replicas": 3, "pdb": {"max_unavailable": 1}}
ZONED = dict(two_az_workers("zoned", 10, [WEB]))
ZONED["nodegroups"] = [dict(ZONED["nodegroups"][0], desired_capacity=4)]
zoned_sandbox = module_sandbox(ZONED)


def test_issue27_item7_the_old_nodes_go_one_zone_after_the_other_with_a_gate_at_the_end_of_each(zoned_sandbox, tmp_path):
    report_path = tmp_path / "report.json"
    result = run_playbook(zoned_sandbox, REPO_ROOT / "playbooks" / "upgrade_nodegroup.yml", {
        "cluster_name": "zoned", "nodegroup_name": "workers", "kubernetes_version": "1.30", "drain_timeout": 30,
        "post_drain_wait": 1, "batch_order": "zone", "upgrade_report_path": str(report_path)})
    assert result.returncode == 0, result.stdout[-3000:]
    report = json.loads(report_path.read_text())
    assert report["status"] == "succeeded"
    zones = [sorted(set(batch["availability_zones"].values())) for batch in report["batches"]]
    assert zones == [["us-west-2a"], ["us-west-2a"], ["us-west-2b"], ["us-west-2b"]], zones
    # The last batch of each zone was gated (no soak asked: a soak of 0 s), the others not.
    assert [batch.get("gate_passed_at") is not None for batch in report["batches"]] == [False, True, False, True]
    assert report["batches"][1]["soak_seconds"] == 0 and "Deployment default/web" in str(report["batches"])
    assert "is ignored: batch_order zone replaces the old nodes one zone after the other" in result.stdout
    sandbox_report = zoned_sandbox.report()
    assert sandbox_report["pods_lost"] == [] and sandbox_report["pdb_violations"] == []
