# -*- coding: utf-8 -*-
# Copyright: Contributors to the eksops.nodegroup project
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Issue 27 item 3: what the pause and abort tests share (test_issue27_item3_*.py, one file a theme so that their
long runs go on separate workers): the playbooks, an upgrade run started in a session of its own and paused from
another process, and what a pause or an abort must leave. Each test module gets a sandbox of its own, of scenario
surge5 (five nodes), and each case starts from a finished group and upgrades it to the AMI it does not run yet.
"""

from __future__ import annotations

from nodegroup_state import workers_asg
from sandbox_helpers import REPO_ROOT, kill_playbook, run_playbook, start_playbook, wait_for
from upgrade_runs import JOURNAL_PREFIX, PLAYBOOK, RUN_TIMEOUT, upgrade_extra_vars

PAUSE = REPO_ROOT / "playbooks" / "pause_upgrade.yml"
ABORT = REPO_ROOT / "playbooks" / "abort_upgrade.yml"
PAUSE_TAG = JOURNAL_PREFIX + "pause"
LEASE_TAG = JOURNAL_PREFIX + "lease"
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


def upgrade_acted_on(sandbox, tmp_path, name, target, act, batches=1, timeout=RUN_TIMEOUT):
    """An upgrade to ``target`` (its report ``<name>.json``, start_upgrade) on which another process acts once
    ``batches`` batches have ended: ``act()``, then the run waited for (``timeout``); what ``act()`` returned."""
    done = batches_done(sandbox, batches)
    run = start_upgrade(sandbox, tmp_path, name, target)
    try:
        wait_for(done, 300, "batch %d" % batches)
        acted = act()
        run.communicate(timeout=timeout)
    finally:
        if run.poll() is None:
            kill_playbook(run, sandbox)
    return acted


def paused_upgrade(sandbox, tmp_path, name, target, batches, **pause_extra):
    """An upgrade to ``target`` (its report ``<name>.json``) paused from another process once ``batches`` batches
    have ended, waited until it has stopped; the pause playbook's output."""
    return upgrade_acted_on(sandbox, tmp_path, name, target, lambda: pause(sandbox, **pause_extra), batches)


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
