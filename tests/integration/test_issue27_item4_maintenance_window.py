# -*- coding: utf-8 -*-
# Copyright: Contributors to the eksops.nodegroup project
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Issue 27 item 4 on the sandbox, through the upgrade playbook: a run started outside its maintenance window changes
nothing and says when the next window opens; a run whose next batch could not end within max_duration_seconds stops
at that safe point without failing the job, and the next run goes on from the journal, nothing lost."""

from __future__ import annotations

import datetime
import json

from nodegroup_state import call_counts, calls_between, changes_by_the_collection, workers_asg
from sandbox_helpers import REPO_ROOT, module_sandbox, run_playbook
from scenarios import two_az_workers
from upgrade_runs import assert_upgraded, journal_phase, other_ami

WINDOW = two_az_workers("window", 8, [{"kind": "Deployment", "name": "web", "replicas": 3, "pdb": {"max_unavailable": 1}}])
window_sandbox = module_sandbox(WINDOW)
DAYS = ("mon", "tue", "wed", "thu", "fri", "sat", "sun")


def upgrade(sandbox, report_path, **extra):
    return run_playbook(sandbox, REPO_ROOT / "playbooks" / "upgrade_nodegroup.yml", dict({
        "cluster_name": "window", "nodegroup_name": "workers", "kubernetes_version": "1.30", "max_unavailable": 1,
        "drain_timeout": 120, "post_drain_wait": 1, "node_ready_timeout": 120,
        "upgrade_report_path": str(report_path)}, **extra))


def test_issue27_item4_a_run_started_outside_its_window_changes_nothing_and_says_when_the_next_one_opens(
        window_sandbox, tmp_path):
    tomorrow = (datetime.datetime.now(datetime.timezone.utc) + datetime.timedelta(days=1)).date()
    window = {"days": [DAYS[tomorrow.weekday()]], "start": "01:00", "end": "03:00", "time_zone": "UTC"}
    version = workers_asg(window_sandbox)["LaunchTemplate"]["Version"]
    before = call_counts(window_sandbox)
    result = upgrade(window_sandbox, tmp_path / "report.json", maintenance_window=window)
    assert result.returncode == 0, result.stdout[-3000:]  # a stop, not a failure
    report = json.loads((tmp_path / "report.json").read_text())
    assert report["status"] == "window_closed" and report["error"]["code"] == "MaintenanceWindowClosed"
    opens = "%sT01:00:00Z" % tomorrow.isoformat()
    assert "outside the maintenance window (%s 01:00-03:00 UTC)" % DAYS[tomorrow.weekday()] in report["error"]["msg"]
    assert "The next maintenance window opens at %s" % opens in report["error"]["msg"]
    assert changes_by_the_collection(before, call_counts(window_sandbox)) == {}
    assert workers_asg(window_sandbox)["LaunchTemplate"]["Version"] == version


def test_issue27_item4_no_batch_starts_that_could_not_end_in_time_and_the_next_run_goes_on(window_sandbox, tmp_path):
    """The first batch may take 241 s (drain_timeout 120 + post_drain_wait 1 + termination 120): with a budget of
    200 s the scale-up (120 s at most) starts, the first batch does not."""
    asg = workers_asg(window_sandbox)
    sizes = (asg["MinSize"], asg["MaxSize"], asg["DesiredCapacity"])
    _current, target = other_ami(window_sandbox)
    stopped = upgrade(window_sandbox, tmp_path / "stopped.json", max_duration_seconds=200)
    assert stopped.returncode == 0, stopped.stdout[-3000:]
    report = json.loads((tmp_path / "stopped.json").read_text())
    assert report["status"] == "window_closed", report["error"]
    assert report["error"]["phase"] == "upgrade" and "Stopped before batch 1" in report["error"]["msg"]
    assert "max_duration_seconds ends at" in report["error"]["msg"]
    assert journal_phase(window_sandbox) == "upgrade"
    assert window_sandbox.report()["pods_lost"] == []
    # Nothing of batch 1 started: no old node cordoned (U4 cordons them after the safe point), none terminated.
    old_nodes = [n for n in window_sandbox.report()["nodegroups"]["workers"]["nodes"] if n["ami"] != target]
    assert len(old_nodes) == 2 and [n["name"] for n in old_nodes if n["unschedulable"]] == []
    assert "STOPPED MaintenanceWindowClosed in phase upgrade" in stopped.stdout

    before = call_counts(window_sandbox)
    resumed = upgrade(window_sandbox, tmp_path / "resumed.json")
    assert resumed.returncode == 0, resumed.stdout[-3000:]
    assert json.loads((tmp_path / "resumed.json").read_text())["status"] == "succeeded"
    # It went on from the journal's target: no new launch template version.
    assert calls_between(before, call_counts(window_sandbox)).get("CreateLaunchTemplateVersion OK", 0) == 0
    assert_upgraded(window_sandbox, target, sizes)


surge_window_sandbox = module_sandbox(two_az_workers(
    "surgewindow", 6, [{"kind": "Deployment", "name": "web", "replicas": 2, "pdb": {"max_unavailable": 1}}]))


def test_issue27_item4_the_surge_strategy_stops_before_a_step_that_could_not_end_in_time(surge_window_sandbox, tmp_path):
    """A surge step may take 361 s (its launch, node_ready_timeout 120, then drain_timeout 120 + post_drain_wait 1 +
    termination 120): with a budget of 200 s no step starts, nothing is launched, and the next run finishes."""
    asg = workers_asg(surge_window_sandbox)
    sizes = (asg["MinSize"], asg["MaxSize"], asg["DesiredCapacity"])
    _current, target = other_ami(surge_window_sandbox)
    args = {"cluster_name": "surgewindow", "nodegroup_name": "workers", "kubernetes_version": "1.30", "max_surge": 1,
            "max_unavailable": 0, "drain_timeout": 120, "post_drain_wait": 1, "node_ready_timeout": 120}
    playbook = REPO_ROOT / "playbooks" / "surge_upgrade.yml"
    stopped = run_playbook(surge_window_sandbox, playbook,
                           dict(args, max_duration_seconds=200, upgrade_report_path=str(tmp_path / "stopped.json")))
    assert stopped.returncode == 0, stopped.stdout[-3000:]
    error = json.loads((tmp_path / "stopped.json").read_text())["error"]
    assert (error["code"], error["stopped_at"]) == ("MaintenanceWindowClosed", "before step 1"), error
    assert workers_asg(surge_window_sandbox)["DesiredCapacity"] == sizes[2]  # nothing launched

    resumed = run_playbook(surge_window_sandbox, playbook, dict(args, upgrade_report_path=str(tmp_path / "resumed.json")))
    assert resumed.returncode == 0, resumed.stdout[-3000:]
    assert_upgraded(surge_window_sandbox, target, sizes)


managed_window_sandbox = module_sandbox("managed")


def test_issue27_item4_an_eks_managed_group_outside_its_window_starts_no_eks_update(managed_window_sandbox, tmp_path):
    tomorrow = (datetime.datetime.now(datetime.timezone.utc) + datetime.timedelta(days=1)).date()
    before = call_counts(managed_window_sandbox)
    result = run_playbook(managed_window_sandbox, REPO_ROOT / "playbooks" / "upgrade_nodegroup.yml", {
        "cluster_name": "managed", "nodegroup_name": "workers", "kubernetes_version": "1.30",
        "maintenance_window": {"days": [DAYS[tomorrow.weekday()]], "start": "01:00", "end": "03:00"},
        "upgrade_report_path": str(tmp_path / "report.json")})
    assert result.returncode == 0, result.stdout[-3000:]
    assert json.loads((tmp_path / "report.json").read_text())["status"] == "window_closed"
    assert changes_by_the_collection(before, call_counts(managed_window_sandbox)) == {}
