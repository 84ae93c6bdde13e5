# -*- coding: utf-8 -*-
# Copyright: Contributors to the eksops.nodegroup project
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Issue 27 item 3: pause a running upgrade from another process, as another AWX job or a second shell does
(test_two_runs.py, test_job_cancel.py), and resume it. Before, a running upgrade could only be killed (its batch cut
off mid-drain).

- pause_upgrade.yml stops the run before its next batch with UpgradePaused, nothing lost; the upgrade playbook run
  again resumes it (its setup withdraws the request) and finishes;
- pause_upgrade.yml cancelled while it waits for the run to stop (SIGKILL, as AWX cancels a job) leaves its request:
  the run stops at its next safe point all the same, and the upgrade playbook run again resumes it and finishes.

The abort: test_issue27_item3_abort_restore.py and test_issue27_item3_abort_rollback.py (pause_abort_runs.py).
"""

from __future__ import annotations

import json
import signal

import pytest

from asg_helpers import journal_tags
from nodegroup_state import workers_asg
from pause_abort_runs import (
    GROUP,
    PAUSE,
    PAUSE_TAG,
    assert_nothing_lost,
    our_tags,
    paused_upgrade,
    sizes,
    upgrade_acted_on,
)
from sandbox_helpers import kill_playbook, run_playbook, start_playbook, wait_for
from upgrade_runs import PLAYBOOK, RUN_TIMEOUT, assert_upgraded, other_ami, upgrade_extra_vars

SCENARIO = "surge5"
# Each case runs two or three playbooks one after the other.
pytestmark = pytest.mark.timeout(600)


def resume(sandbox, tmp_path, target, name):
    """The upgrade playbook run again, as the pause's message says; its report."""
    rerun = run_playbook(sandbox, PLAYBOOK, upgrade_extra_vars(target, tmp_path / ("%s.json" % name), "surge5",
                                                               max_unavailable=1), timeout=RUN_TIMEOUT)
    assert rerun.returncode == 0, rerun.stdout[-5000:]
    assert "Resuming a paused upgrade: the pause asked at" in rerun.stdout
    return rerun.stdout, json.loads((tmp_path / ("%s.json" % name)).read_text())


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
    assert "%d old nodes this run cordoned and has not replaced yet (%s) are uncordoned until the run resumes" % (
        len(old), ", ".join(old)) in report["error"]["msg"]
    assert_nothing_lost(sandbox)

    output, resumed = resume(sandbox, tmp_path, target, "resumed")
    assert "by item3-test" in output
    assert resumed["status"] == "succeeded"
    # The resumed run cordoned them again before its first drain (SPEC U4).
    assert set(old) <= set(resumed["timeline"]["cordoned"]["nodes"])
    assert len(report["replaced_instances"]) + len(resumed["replaced_instances"]) == 5
    assert_upgraded(sandbox, target, sizes_before)


def test_issue27_item3_a_cancelled_pause_leaves_its_request_and_the_rerun_clears_it(sandbox, tmp_path):
    """docs/roles.md: a pause whose wait ends (here: its job cancelled) leaves the request in place, and the run
    stops at its next safe point all the same. The pause playbook is SIGKILLed with every process it started (as
    AWX's cancel does, test_job_cancel.py) once its request is on the group and while it waits for the run."""
    _current, target = other_ami(sandbox)
    sizes_before = sizes(sandbox)

    def cancelled_pause():
        pausing = start_playbook(sandbox, PAUSE, {**GROUP, "wait": True, "wait_timeout": 300, "requested_by": "awx"},
                                 start_new_session=True)
        try:
            wait_for(lambda: PAUSE_TAG in our_tags(sandbox), 120, "the pause request")
        finally:
            kill_playbook(pausing, sandbox)
        output = pausing.communicate(timeout=60)[0]
        return pausing.returncode, output

    returncode, output = upgrade_acted_on(sandbox, tmp_path, "pause_cancelled", target, cancelled_pause)
    # Killed while it waited: it never saw the run stop.
    assert returncode == -signal.SIGKILL and "the run is stopped" not in output, output[-3000:]
    stopped = json.loads((tmp_path / "pause_cancelled.json").read_text())
    assert (stopped["status"], stopped["error"]["code"]) == ("paused", "UpgradePaused"), stopped["error"]
    assert PAUSE_TAG in our_tags(sandbox) and "lease" not in journal_tags(workers_asg(sandbox))
    assert_nothing_lost(sandbox)

    output, resumed = resume(sandbox, tmp_path, target, "pause_cancelled_resumed")
    assert "by awx" in output and resumed["status"] == "succeeded"
    assert PAUSE_TAG not in our_tags(sandbox)
    assert_upgraded(sandbox, target, sizes_before)
