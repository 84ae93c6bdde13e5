# -*- coding: utf-8 -*-
# Copyright: Contributors to the eksops.nodegroup project
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Issue 27 item 4 on the sandbox, through the upgrade playbook: a run started outside its maintenance window changes
nothing and says when the next window opens; a run whose next batch could not end within max_duration_seconds stops
at that safe point without failing the job, and the next run goes on from the journal, nothing lost. The surge
strategy's and an EKS managed group's: test_issue27_item4_surge_and_managed_windows.py."""

from __future__ import annotations

import datetime
import json

from nodegroup_state import call_counts, calls_between, changes_by_the_collection, workers_asg
from sandbox_helpers import REPO_ROOT, module_sandbox, run_playbook
from scenarios import two_az_workers
from upgrade_runs import assert_upgraded, journal_phase, other_ami

WINDOW = two_az_workers("window", 10, [{"kind": "Deployment", "name": "web", "replicas": 3, "pdb": {"max_unavailable": 1}}])
WINDOW["nodegroups"][0]["desired_capacity"] = 4
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


def test_issue27_item4_no_phase_starts_that_could_not_end_in_time_and_the_next_run_goes_on(window_sandbox, tmp_path):
    """Each batch waits post_drain_wait 30 s (no load balancer lets a node go sooner): four batches take 120 s or
    more. With a budget of 240 s the start (the scale-up, 60 s, and a first batch, 60 + 30 + 60 = 150 s) fits, each
    batch fits (the first by its bound, the others by the longest so far), the scale-down (150 s at most) after
    them does not: the run stops before it, the old nodes all replaced, and the next run only scales down."""
    asg = workers_asg(window_sandbox)
    sizes = (asg["MinSize"], asg["MaxSize"], asg["DesiredCapacity"])
    _current, target = other_ami(window_sandbox)
    timing = {"drain_timeout": 60, "post_drain_wait": 30, "node_ready_timeout": 60}
    stopped = upgrade(window_sandbox, tmp_path / "stopped.json", max_duration_seconds=240, **timing)
    assert stopped.returncode == 0, stopped.stdout[-3000:]
    report = json.loads((tmp_path / "stopped.json").read_text())
    assert report["status"] == "window_closed", report["error"]
    assert (report["error"]["phase"], report["error"]["stopped_at"]) == ("scale_down", "before phase scale_down")
    assert "max_duration_seconds ends at" in report["error"]["msg"]
    assert [b["batch"] for b in report["batches"]] == [1, 2, 3, 4]
    assert journal_phase(window_sandbox) == "upgrade"  # kept; the scale-down had not started
    assert window_sandbox.report()["pods_lost"] == []
    assert "STOPPED MaintenanceWindowClosed in phase scale_down" in stopped.stdout

    before = call_counts(window_sandbox)
    resumed = upgrade(window_sandbox, tmp_path / "resumed.json", **timing)
    assert resumed.returncode == 0, resumed.stdout[-3000:]
    resumed_report = json.loads((tmp_path / "resumed.json").read_text())
    assert resumed_report["status"] == "succeeded" and resumed_report["batches"] == []
    # It went on from the journal: no new launch template version, no scale-up, no pod moved again.
    assert calls_between(before, call_counts(window_sandbox)).get("CreateLaunchTemplateVersion OK", 0) == 0
    assert resumed_report["pods_evicted"] == 0
    assert_upgraded(window_sandbox, target, sizes)


def test_issue27_item4_a_budget_too_short_for_the_first_batch_is_an_input_error_before_any_change(
        window_sandbox, tmp_path):
    """The scale-up (120 s) and a first batch (120 + 1 + 120 s) may take 361 s: 200 s could never hold them, so
    every run would scale up and stop; the run refuses the budget instead, naming it, and changes nothing."""
    before = call_counts(window_sandbox)
    result = upgrade(window_sandbox, tmp_path / "report.json", max_duration_seconds=200, kubernetes_version="1.29",
                     allow_downgrade=True)
    assert result.returncode != 0
    error = json.loads((tmp_path / "report.json").read_text())["error"]
    assert (error["code"], error["parameter"]) == ("InvalidParameter", "max_duration_seconds"), error
    assert "max_duration_seconds leaves 200 s, and the work before the upgrade starts may take 361 s" in error["msg"]
    assert changes_by_the_collection(before, call_counts(window_sandbox)) == {}
