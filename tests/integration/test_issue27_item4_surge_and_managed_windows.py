# -*- coding: utf-8 -*-
# Copyright: Contributors to the eksops.nodegroup project
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Issue 27 item 4 on the sandbox, the surge strategy and an EKS managed group (test_issue27_item4_maintenance_window.py
has the rolling strategy's; a file of its own, so that the long runs of the two go on separate test workers): the
surge steps and the scale-down are checked against max_duration_seconds, and an EKS managed group outside its window
starts no EKS update."""

from __future__ import annotations

import datetime
import json

from nodegroup_state import call_counts, changes_by_the_collection, workers_asg
from sandbox_helpers import REPO_ROOT, module_sandbox, run_playbook
from scenarios import two_az_workers
from upgrade_runs import assert_upgraded, other_ami


SURGE_WINDOW = two_az_workers("surgewindow", 6, [{"kind": "Deployment", "name": "web", "replicas": 2,
                                                  "pdb": {"max_unavailable": 1}}])
SURGE_WINDOW["nodegroups"][0]["desired_capacity"] = 3
surge_window_sandbox = module_sandbox(SURGE_WINDOW)


def test_issue27_item4_the_surge_strategy_checks_its_steps_and_the_scale_down_against_the_budget(
        surge_window_sandbox, tmp_path):
    """Three surge steps, each waiting post_drain_wait 30 s: 90 s or more. With a budget of 240 s the first step
    (its launch, 60 s, then 60 + 30 + 60 s) fits, the others by the longest so far, the scale-down (150 s at most)
    after them does not: the run stops before it, and the next run finishes."""
    asg = workers_asg(surge_window_sandbox)
    sizes = (asg["MinSize"], asg["MaxSize"], asg["DesiredCapacity"])
    _current, target = other_ami(surge_window_sandbox)
    args = {"cluster_name": "surgewindow", "nodegroup_name": "workers", "kubernetes_version": "1.30", "max_surge": 1,
            "max_unavailable": 0, "drain_timeout": 60, "post_drain_wait": 30, "node_ready_timeout": 60}
    playbook = REPO_ROOT / "playbooks" / "surge_upgrade.yml"
    stopped = run_playbook(surge_window_sandbox, playbook,
                           dict(args, max_duration_seconds=240, upgrade_report_path=str(tmp_path / "stopped.json")))
    assert stopped.returncode == 0, stopped.stdout[-3000:]
    report = json.loads((tmp_path / "stopped.json").read_text())
    assert (report["error"]["code"], report["error"]["stopped_at"]) == ("MaintenanceWindowClosed",
                                                                        "before phase scale_down"), report["error"]
    assert [b["batch"] for b in report["batches"]] == [1, 2, 3]

    resumed = run_playbook(surge_window_sandbox, playbook, dict(args, upgrade_report_path=str(tmp_path / "resumed.json")))
    assert resumed.returncode == 0, resumed.stdout[-3000:]
    assert_upgraded(surge_window_sandbox, target, sizes)


managed_window_sandbox = module_sandbox("managed")


def test_issue27_item4_an_eks_managed_group_outside_its_window_starts_no_eks_update(managed_window_sandbox, tmp_path):
    tomorrow = (datetime.datetime.now(datetime.timezone.utc) + datetime.timedelta(days=1)).date()
    before = call_counts(managed_window_sandbox)
    result = run_playbook(managed_window_sandbox, REPO_ROOT / "playbooks" / "upgrade_nodegroup.yml", {
        "cluster_name": "managed", "nodegroup_name": "workers", "kubernetes_version": "1.30",
        "maintenance_window": {"days": [tomorrow.strftime("%a").lower()], "start": "01:00", "end": "03:00"},
        "upgrade_report_path": str(tmp_path / "report.json")})
    assert result.returncode == 0, result.stdout[-3000:]
    assert json.loads((tmp_path / "report.json").read_text())["status"] == "window_closed"
    assert changes_by_the_collection(before, call_counts(managed_window_sandbox)) == {}
