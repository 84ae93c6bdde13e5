# -*- coding: utf-8 -*-
# Copyright: Contributors to the eksops.nodegroup project
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Issue 27 item 3: abort_upgrade.yml without a rollback, and with one where there is nothing to roll back. Before,
an unfinished upgrade could only be finished.

- abort_upgrade.yml after a pause, killed while it restores the group and run again, leaves nothing cordoned, the
  sizes and processes as before the upgrade, no lease, journal or request; a rerun then has nothing to abort;
- abort_upgrade.yml rollback=true on an upgrade stopped after its setup (nothing replaced yet) points the group back
  and restores it, surging and replacing nothing;
- an abort that cannot stop the live run within its wait_timeout changes nothing.

The pause: test_issue27_item3_pause_resume.py; the rollback: test_issue27_item3_abort_rollback.py.
"""

from __future__ import annotations

import time

import pytest

from asg_helpers import asg_state, edit_journal, journal_tags
from nodegroup_state import workers_asg
from pause_abort_runs import (
    ABORT,
    BATCH_SECONDS,
    GROUP,
    LEASE_TAG,
    PAUSE_TAG,
    abort,
    assert_consistent,
    our_tags,
    paused_upgrade,
    sizes,
)
from sandbox_helpers import kill_playbook, run_module, run_playbook, start_playbook, wait_for
from upgrade_runs import PLAYBOOK, RUN_TIMEOUT, assert_upgraded, end_the_killed_runs_lease, other_ami, upgrade_extra_vars

SCENARIO = "surge5"
# Each case runs up to five playbooks one after the other.
pytestmark = pytest.mark.timeout(600)


def test_issue27_item3_abort_rollback_from_phase_setup_surges_nothing(sandbox):
    """An upgrade stopped after its setup (the target pinned, processes suspended, the journal in setup; its lease
    released as a stopped run releases it) has replaced nothing: rollback=true points the group back at the version
    it started from and restores it, without an upgrade run, so no instance is launched or terminated."""
    current, target = other_ami(sandbox)
    sizes_before = sizes(sandbox)
    before = asg_state(sandbox)
    setup = run_module(sandbox, "nodegroup_setup", {**GROUP, "image_id": target, "lease_id": "setup-run"})
    journal = journal_tags(workers_asg(sandbox))
    assert setup.get("failed") is not True and journal["phase"] == "setup", setup
    assert workers_asg(sandbox)["LaunchTemplate"]["Version"] == journal["target_launch_template_version"]
    run_module(sandbox, "nodegroup_lease", {**GROUP, "lease_id": "setup-run"})
    aborted = abort(sandbox, rollback=True)
    assert aborted.returncode == 0, aborted.stdout[-5000:]
    assert "nothing to roll back" in aborted.stdout, aborted.stdout[-3000:]
    # The same instances (none launched, none terminated), sizes and processes; the version the group started from.
    assert asg_state(sandbox) == before
    assert workers_asg(sandbox)["LaunchTemplate"]["Version"] == journal["previous_launch_template_version"]
    assert_consistent(sandbox, sizes_before)
    assert {node["ami"] for node in sandbox.report()["nodegroups"]["workers"]["nodes"]} == {current}


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


def test_issue27_item3_an_abort_killed_while_it_restores_the_group_is_finished_by_a_rerun(sandbox, tmp_path):
    """Killed once the restore has begun (the journal in scale_down: the surplus node being drained and removed),
    as AWX cancels a job; run again, the abort finishes it (the killed abort's lease ended at once, as the docs
    allow, rather than waited for)."""
    current, target = other_ami(sandbox)
    sizes_before = sizes(sandbox)
    paused_upgrade(sandbox, tmp_path, "to_abort", target, 1)
    killed = start_playbook(sandbox, ABORT, {**GROUP, "drain_timeout": 60, "post_drain_wait": BATCH_SECONDS},
                            start_new_session=True)
    try:
        wait_for(lambda: journal_tags(workers_asg(sandbox)).get("phase") == "scale_down", 120, "the restore")
    finally:
        kill_playbook(killed, sandbox)
    output = killed.communicate(timeout=60)[0]
    assert killed.returncode < 0 and "Aborted the upgrade" not in output, output[-3000:]
    end_the_killed_runs_lease(sandbox)
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
