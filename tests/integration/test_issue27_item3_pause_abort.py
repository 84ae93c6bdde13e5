# -*- coding: utf-8 -*-
# Copyright: Contributors to the eksops.nodegroup project
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Issue 27 item 3: pause, resume and abort a running upgrade, each from another process, as another AWX job or a
second shell does (test_two_runs.py, test_job_cancel.py). Before, a running upgrade could only be killed (its batch cut
off mid-drain) and an unfinished one only finished.

- pause_upgrade.yml stops the run before its next batch with UpgradePaused, nothing lost; the upgrade playbook run
  again resumes it (its setup withdraws the request) and finishes;
- abort_upgrade.yml after a pause leaves nothing cordoned, the sizes and processes as before the upgrade, no lease,
  journal or request;
- abort_upgrade.yml rollback=true on a live run pauses it, then rolls the replaced nodes back to the AMI the group
  started from;
- an abort killed inside its rollback, run again, finishes it;
- an abort that cannot stop the live run within its wait_timeout changes nothing.

One sandbox serves the module (as test_crash_resume.py): each case starts from a finished group and upgrades it to
the AMI it does not run yet.
"""

from __future__ import annotations

import json
import time

import pytest

from asg_helpers import asg_state, edit_journal, journal_tags
from nodegroup_state import workers_asg
from sandbox_helpers import REPO_ROOT, kill_playbook, run_playbook, start_playbook, wait_for
from upgrade_runs import PLAYBOOK, RUN_TIMEOUT, assert_upgraded, other_ami, upgrade_extra_vars

SCENARIO = "surge5"
# Each case runs two to four playbooks one after the other.
pytestmark = pytest.mark.timeout(900)
PAUSE = REPO_ROOT / "playbooks" / "pause_upgrade.yml"
ABORT = REPO_ROOT / "playbooks" / "abort_upgrade.yml"
PAUSE_TAG = "eksops.nodegroup/pause"
LEASE_TAG = "eksops.nodegroup/lease"
GROUP = {"cluster_name": "surge5", "nodegroup_name": "workers"}
# The post-drain wait of the upgrades paused or aborted here: long enough for another process to act between batches.
BATCH_SECONDS = 8


def sizes(sandbox):
    asg = workers_asg(sandbox)
    return asg["MinSize"], asg["MaxSize"], asg["DesiredCapacity"]


def our_tags(sandbox):
    return sorted(tag["Key"] for tag in workers_asg(sandbox).get("Tags", []) if tag["Key"].startswith("eksops."))


def start_upgrade(sandbox, tmp_path, name, target):
    """The upgrade playbook, one node a batch (five batches of at least BATCH_SECONDS), started in a session of its
    own."""
    extra = upgrade_extra_vars(target, tmp_path / ("%s.json" % name), "surge5", max_unavailable=1,
                               post_drain_wait=BATCH_SECONDS)
    return start_playbook(sandbox, PLAYBOOK, extra, start_new_session=True)


def terminations(sandbox):
    return sandbox.report()["aws_calls"].get("TerminateInstanceInAutoScalingGroup OK", 0)


def batches_done(sandbox, count):
    """Until ``count`` more old nodes are terminated than now (the sandbox counts since it started)."""
    before = terminations(sandbox)
    return lambda: terminations(sandbox) - before >= count


def pause(sandbox, **extra):
    result = run_playbook(sandbox, PAUSE, {**GROUP, "wait": True, "wait_timeout": 300, **extra}, timeout=400)
    assert result.returncode == 0, result.stdout[-4000:] + result.stderr[-2000:]
    return result.stdout


def paused_upgrade(sandbox, tmp_path, name, target, batches, **pause_extra):
    """An upgrade to ``target`` (its report ``<name>.json``) paused from another process once ``batches`` batches
    have ended, waited until it has stopped; the pause playbook's output."""
    done = batches_done(sandbox, batches)
    run = start_upgrade(sandbox, tmp_path, name, target)
    try:
        wait_for(done, 300, "batch %d" % batches)
        output = pause(sandbox, **pause_extra)
        run.communicate(timeout=RUN_TIMEOUT)
    finally:
        if run.poll() is None:
            kill_playbook(run, sandbox)
    return output


def abort(sandbox, **extra):
    return run_playbook(sandbox, ABORT, {**GROUP, "drain_timeout": 60, "post_drain_wait": 1, "wait_timeout": 300,
                                         **extra}, timeout=RUN_TIMEOUT + 300)


def assert_nothing_lost(sandbox):
    report = sandbox.report()
    lost, violations = report["pods_lost"], report["pdb_violations"]
    assert lost == [] and violations == [], (lost, violations)


def assert_consistent(sandbox, sizes_before):
    """What an abort leaves: nothing cordoned, sizes and processes as before, no tag of ours, nothing lost."""
    asg = workers_asg(sandbox)
    assert sizes(sandbox) == sizes_before
    assert asg.get("SuspendedProcesses", []) == []
    assert our_tags(sandbox) == []
    nodes = sandbox.report()["nodegroups"]["workers"]["nodes"]
    assert len(nodes) == sizes_before[2]
    stuck = [node["name"] for node in nodes if node["unschedulable"] or not node["ready"]]
    assert stuck == [], [(n, sandbox.core_v1().read_node(n).metadata.annotations, [x for x in nodes if x["name"] == n])
                         for n in stuck]
    assert_nothing_lost(sandbox)


def test_issue27_item3_a_paused_run_stops_before_its_next_batch_the_stop_uncordons_its_old_nodes_and_a_rerun_resumes_it(
        sandbox, tmp_path):
    current, target = other_ami(sandbox)
    sizes_before = sizes(sandbox)
    output = paused_upgrade(sandbox, tmp_path, "paused", target, 1, requested_by="item3-test")
    assert "the run is stopped" in output, output[-3000:]
    report = json.loads((tmp_path / "paused.json").read_text())
    assert (report["status"], report["error"]["code"]) == ("paused", "UpgradePaused"), report["error"]
    assert "item3-test" in report["error"]["msg"]
    assert 1 <= len(report["replaced_instances"]) < 5
    journal = journal_tags(workers_asg(sandbox))
    assert journal["phase"] == "upgrade" and "lease" not in journal and PAUSE_TAG in our_tags(sandbox)
    # Stopped at a safe point: every node that is left is Ready; the old ones, which the upgrade phase cordoned
    # before its first drain (SPEC U4), are uncordoned until the run resumes, holding their pods; nothing lost.
    nodes = sandbox.report()["nodegroups"]["workers"]["nodes"]
    assert all(node["ready"] for node in nodes)
    old = sorted(node["name"] for node in nodes if node["ami"] == current)
    assert old and not any(node["unschedulable"] for node in nodes if node["ami"] == current)
    assert report["error"]["uncordoned_nodes"] == old
    assert "%d old nodes this run cordoned and did not drain (%s) are uncordoned until the run resumes" % (
        len(old), ", ".join(old)) in report["error"]["msg"]
    assert_nothing_lost(sandbox)

    rerun = run_playbook(sandbox, PLAYBOOK, upgrade_extra_vars(target, tmp_path / "resumed.json", "surge5",
                                                               max_unavailable=1), timeout=RUN_TIMEOUT)
    assert rerun.returncode == 0, rerun.stdout[-5000:]
    assert "Resuming a paused upgrade: the pause asked at" in rerun.stdout and "by item3-test" in rerun.stdout
    resumed = json.loads((tmp_path / "resumed.json").read_text())
    assert resumed["status"] == "succeeded"
    # The resumed run cordoned them again before its first drain (SPEC U4).
    assert set(old) <= set(resumed["timeline"]["cordoned"]["nodes"])
    assert len(report["replaced_instances"]) + len(resumed["replaced_instances"]) == 5
    assert_upgraded(sandbox, target, sizes_before)


def test_issue27_item3_abort_after_a_pause_leaves_the_group_consistent(sandbox, tmp_path):
    current, target = other_ami(sandbox)
    sizes_before = sizes(sandbox)
    paused_upgrade(sandbox, tmp_path, "to_abort", target, 1)
    aborted = abort(sandbox)
    assert aborted.returncode == 0, aborted.stdout[-5000:]
    assert "Aborted the upgrade of Auto Scaling group" in aborted.stdout
    assert_consistent(sandbox, sizes_before)
    amis = {node["ami"] for node in sandbox.report()["nodegroups"]["workers"]["nodes"]}
    assert amis <= {current, target}
    # A rerun has nothing left to abort; an upgrade after the abort starts afresh and converges.
    again = abort(sandbox)
    assert again.returncode == 0 and "no upgrade to abort, nothing" in again.stdout, again.stdout[-3000:]
    after = run_playbook(sandbox, PLAYBOOK, upgrade_extra_vars(current, tmp_path / "after.json", "surge5"),
                         timeout=RUN_TIMEOUT)
    assert after.returncode == 0, after.stdout[-5000:]
    assert_upgraded(sandbox, current, sizes_before)


def test_issue27_item3_abort_with_rollback_pauses_the_live_run_and_rolls_its_nodes_back(sandbox, tmp_path):
    current, target = other_ami(sandbox)
    sizes_before = sizes(sandbox)
    done = batches_done(sandbox, 1)
    run = start_upgrade(sandbox, tmp_path, "rolled_back", target)
    try:
        wait_for(done, 300, "the first batch")
        aborted = abort(sandbox, rollback=True, upgrade_report_path=str(tmp_path / "rollback.json"))
        run.communicate(timeout=60)
    finally:
        if run.poll() is None:
            kill_playbook(run, sandbox)
    assert aborted.returncode == 0, aborted.stdout[-6000:]
    stopped = json.loads((tmp_path / "rolled_back.json").read_text())
    assert stopped["error"]["code"] == "UpgradePaused" and "abort_upgrade" in stopped["error"]["msg"]
    assert json.loads((tmp_path / "rollback.json").read_text())["status"] == "succeeded"
    assert_consistent(sandbox, sizes_before)
    assert_upgraded(sandbox, current, sizes_before)


def test_issue27_item3_an_abort_killed_in_its_rollback_is_finished_by_a_rerun(sandbox, tmp_path):
    current, target = other_ami(sandbox)
    sizes_before = sizes(sandbox)
    paused_upgrade(sandbox, tmp_path, "killed_abort", target, 1)
    killed = start_playbook(sandbox, ABORT, {**GROUP, "rollback": True, "drain_timeout": 60,
                                             "post_drain_wait": BATCH_SECONDS}, start_new_session=True)
    try:
        # Killed once the rollback's own upgrade is replacing nodes: the journal retargeted, a batch under way.
        wait_for(lambda: journal_tags(workers_asg(sandbox)).get("rollback_of") is not None
                 and journal_tags(workers_asg(sandbox)).get("phase") == "upgrade", 300, "the rollback's upgrade")
        time.sleep(2)
    finally:
        kill_playbook(killed, sandbox)
        killed.communicate(timeout=60)
    assert journal_tags(workers_asg(sandbox)).get("rollback_of") is not None
    rerun = abort(sandbox, rollback=True)
    assert rerun.returncode == 0, rerun.stdout[-6000:]
    assert_consistent(sandbox, sizes_before)
    assert_upgraded(sandbox, current, sizes_before)


def test_issue27_item3_an_abort_that_cannot_stop_the_run_in_time_changes_nothing(sandbox):
    """A live run (its lease renewed, here for ten minutes) that does not reach a safe point within wait_timeout: the
    abort is refused with WaitTimeout, the pause request it wrote withdrawn, the run's journal and lease as they
    were."""
    edit_journal(sandbox, run_id="live-run", phase="upgrade", started_at="2026-11-28T20:00:00Z")
    asg_name = workers_asg(sandbox)["AutoScalingGroupName"]
    expires = time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime(time.time() + 600))
    sandbox.client("autoscaling").create_or_update_tags(Tags=[dict(
        ResourceId=asg_name, ResourceType="auto-scaling-group", Key=LEASE_TAG, Value="live-lease " + expires,
        PropagateAtLaunch=False)])
    before = asg_state(sandbox)
    try:
        refused = abort(sandbox, wait_timeout=3)
        assert refused.returncode != 0
        assert "WaitTimeout" in refused.stdout and "The abort is refused" in refused.stdout, refused.stdout[-4000:]
        assert "this abort wrote is withdrawn" in refused.stdout
        assert asg_state(sandbox) == before and PAUSE_TAG not in our_tags(sandbox)
    finally:
        sandbox.client("autoscaling").delete_tags(Tags=[dict(ResourceId=asg_name, ResourceType="auto-scaling-group",
                                                             Key=key) for key in our_tags(sandbox)])
