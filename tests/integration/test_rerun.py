# -*- coding: utf-8 -*-
# Copyright: Contributors to the eksops.nodegroup project
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""SPEC K5, issue 10 items 1 and 20: nothing to do means nothing changed.

A weekly AWX schedule reruns the same job on a group already upgraded, and a job may name the target the group
already runs: neither may surge, evict, terminate or write a journal. The playbook's own report says the group
was already on the target.
"""

from __future__ import annotations

import json

from nodegroup_state import call_counts, changes_by_the_collection
from sandbox_helpers import REPO_ROOT, run_playbook

SCENARIO = "surge5"
PLAYBOOK = REPO_ROOT / "playbooks" / "upgrade_nodegroup.yml"


def upgrade(sandbox, tmp_path, kubernetes_version):
    report = tmp_path / "report.json"
    result = run_playbook(sandbox, PLAYBOOK, {
        "cluster_name": "surge5", "nodegroup_name": "workers", "kubernetes_version": kubernetes_version,
        "max_unavailable": 2, "drain_timeout": 60, "post_drain_wait": 0, "upgrade_report_path": str(report)})
    assert result.returncode == 0, result.stdout[-4000:] + result.stderr[-2000:]
    return json.loads(report.read_text())


def test_a_target_the_group_already_runs_changes_nothing(sandbox, tmp_path):
    """Item 20: kubernetes_version 1.29 on 1.29 nodes."""
    before = call_counts(sandbox)
    report = upgrade(sandbox, tmp_path, "1.29")
    assert changes_by_the_collection(before, call_counts(sandbox)) == {}
    assert report["status"] == "succeeded" and report["on_target_already"] is True
    assert report["replaced_instances"] == [] and report["pods_evicted"] == 0


def test_a_rerun_after_an_upgrade_changes_nothing(sandbox, tmp_path):
    """Item 1: the same job twice; the second run finds every instance on the target."""
    first = upgrade(sandbox, tmp_path, "1.30")
    assert first["status"] == "succeeded" and first["on_target_already"] is False
    assert len(first["replaced_instances"]) == 5
    before = call_counts(sandbox)
    second = upgrade(sandbox, tmp_path, "1.30")
    assert changes_by_the_collection(before, call_counts(sandbox)) == {}
    assert second["on_target_already"] is True and second["replaced_instances"] == []
    report = sandbox.report()
    assert report["pods_lost"] == [] and report["pdb_violations"] == []
    assert report["nodegroups"]["workers"]["asg"]["desired"] == 5


def test_both_parallelism_settings_are_refused_before_any_change(sandbox):
    """Issue 10 item 3: mutually exclusive, as in EKS's updateConfig (the percentage silently won)."""
    before = call_counts(sandbox)
    result = run_playbook(sandbox, PLAYBOOK, {"cluster_name": "surge5", "nodegroup_name": "workers",
                                              "kubernetes_version": "1.30", "max_unavailable": 2,
                                              "max_unavailable_percentage": 50})
    assert result.returncode != 0 and "mutually exclusive" in result.stdout
    assert changes_by_the_collection(before, call_counts(sandbox)) == {}
