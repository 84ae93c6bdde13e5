# -*- coding: utf-8 -*-
# Copyright: Contributors to the eksops.nodegroup project
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Issue 27 item 3: a running upgrade is asked to pause from another job (module nodegroup_pause), run in-process
against moto. The request is the tag the run reads at each safe point (nodegroup/pause.py); it is written only
where an upgrade is under way, kept as it is by a rerun, withdrawn with state=absent, and never written on an EKS
managed node group (SPEC K3). wait waits for the run's lease to go."""

from __future__ import annotations

import datetime

import pytest
from moto import mock_aws

from ansible_collections.eksops.nodegroup.plugins.module_utils.errors import UpgradeError
from ansible_collections.eksops.nodegroup.plugins.module_utils.nodegroup import lease, pause
from ansible_collections.eksops.nodegroup.plugins.module_utils.nodegroup.journal import Journal, write_journal
from ansible_collections.eksops.nodegroup.plugins.module_utils.nodegroup.kinds import MANAGED
from ansible_collections.eksops.nodegroup.plugins.module_utils.steps import nodegroup_pause as pause_step
from ansible_collections.eksops.nodegroup.plugins.modules import nodegroup_pause

from ..fakes import FakeClock
from ..moto_nodegroup import CLUSTER, NODEGROUP, MotoNodegroup, run_module_in_process

BASE = dict(cluster_name=CLUSTER, nodegroup_name=NODEGROUP)


def set_tag(world, key, value):
    world.autoscaling.create_or_update_tags(Tags=[dict(ResourceId=world.asg_name, ResourceType="auto-scaling-group",
                                                       Key=key, Value=value, PropagateAtLaunch=False)])


@pytest.fixture
def world():
    with mock_aws():
        yield MotoNodegroup(desired=2)


def upgrading(world, lease_id="run-lease"):
    """An upgrade under way: its journal, and a live run's lease."""
    write_journal(world.autoscaling, world.asg_name, Journal.start(run_id="run-1", phase="upgrade"))
    if lease_id:
        set_tag(world, lease.LEASE_TAG, lease.lease_value(lease_id))
    return world


@pytest.fixture
def run(capsys):
    def run_it(check=False, diff=False, **args):
        return run_module_in_process(nodegroup_pause.main, dict(BASE, **args), capsys, check=check, diff=diff)
    return run_it


def test_issue27_item3_the_request_is_written_where_the_run_reads_it(world, run):
    upgrading(world)
    result = run(requested_by="alice")
    assert result["changed"] is True
    request = pause.pause_request(world.asg()["Tags"])
    assert request is not None and request.requested_by == "alice"
    assert result["pause"]["requested"] is True and result["pause"]["requested_by"] == "alice"
    found = result["pause"]
    assert (found["run_id"], found["phase"], found["run_live"]) == ("run-1", "upgrade", True)
    # The run's safe point stops on it, naming who asked.
    stop = pause.paused_error(world.asg_name, request, "before batch 2")
    assert stop.code == "UpgradePaused" and "by alice" in stop.msg


def test_issue27_item3_a_rerun_keeps_the_request_as_it_is(world, run):
    upgrading(world)
    set_tag(world, pause.PAUSE_TAG, "2026-11-28T20:00:00Z bob")
    result = run(requested_by="alice")
    assert result["changed"] is False
    assert world.tags()[pause.PAUSE_TAG] == "2026-11-28T20:00:00Z bob"
    assert (result["pause"]["requested_at"], result["pause"]["requested_by"]) == ("2026-11-28T20:00:00Z", "bob")


def test_issue27_item3_check_mode_and_diff_show_the_request_and_write_nothing(world, run):
    upgrading(world)
    result = run(check=True, diff=True, requested_by="alice")
    assert result["changed"] is True and pause.PAUSE_TAG not in world.tags()
    assert result["diff"]["before"]["requested"] is False and result["diff"]["after"]["requested"] is True


def test_issue27_item3_no_upgrade_under_way_writes_nothing_and_says_so(world, run):
    result = run()
    assert result["changed"] is False and pause.PAUSE_TAG not in world.tags()
    assert result["pause"]["upgrade_in_progress"] is False
    assert "nothing to pause" in str(result["warnings"]), result["warnings"]


def test_issue27_item3_a_live_run_without_a_journal_yet_is_asked_all_the_same(world, run):
    set_tag(world, lease.LEASE_TAG, lease.lease_value("starting"))
    assert run()["changed"] is True and pause.PAUSE_TAG in world.tags()


def test_issue27_item3_state_absent_withdraws_the_request(world, run):
    upgrading(world)
    set_tag(world, pause.PAUSE_TAG, "2026-11-28T20:00:00Z bob")
    result = run(state="absent")
    assert result["changed"] is True and pause.PAUSE_TAG not in world.tags()
    assert result["pause"]["requested"] is False
    assert run(state="absent")["changed"] is False


def test_issue27_item3_k3_a_managed_node_group_is_refused_and_left_alone(capsys):
    with mock_aws():
        world = MotoNodegroup(desired=2, kind=MANAGED)
        result = run_module_in_process(nodegroup_pause.main, dict(BASE), capsys)
        assert result["failed"] is True and result["code"] == "InvalidParameter"
        assert result["parameter"] == "nodegroup_name" and "no way to pause" in result["msg"]
        assert "Nothing was changed." in result["msg"] and pause.PAUSE_TAG not in world.tags()


def test_issue27_item3_inputs_are_refused_naming_them(world, run):
    upgrading(world)
    assert run(wait_timeout=0)["parameter"] == "wait_timeout"
    assert run(requested_by="x" * 300)["parameter"] == "requested_by"
    assert pause.PAUSE_TAG not in world.tags()


def test_issue27_item3_wait_ends_when_the_runs_lease_goes(world):
    upgrading(world)
    clock = FakeClock()
    original = clock.sleep

    def sleep(seconds):
        original(seconds)
        if len(clock.sleeps) == 3:  # the run reaches its safe point and releases its lease
            world.autoscaling.delete_tags(Tags=[dict(ResourceId=world.asg_name, ResourceType="auto-scaling-group",
                                                     Key=lease.LEASE_TAG)])
    clock.sleep = sleep
    state, waited = pause_step.wait_stopped(world.autoscaling, world.asg_name, 60, clock)
    assert state["run_live"] is False and state["run_id"] == "run-1"
    assert waited == 3 * pause_step.POLL_SECONDS


def test_issue27_item3_wait_times_out_and_leaves_the_request(world):
    upgrading(world)
    set_tag(world, pause.PAUSE_TAG, "2026-11-28T20:00:00Z bob")
    with pytest.raises(UpgradeError) as timed_out:
        pause_step.wait_stopped(world.autoscaling, world.asg_name, 12, FakeClock())
    assert timed_out.value.code == "WaitTimeout" and "wait_timeout" in timed_out.value.msg
    assert pause.PAUSE_TAG in world.tags()


def test_issue27_item3_a_lapsed_lease_is_a_stopped_run():
    now = datetime.datetime(2026, 11, 28, 21, 0, tzinfo=datetime.timezone.utc)
    tags = [dict(Key=lease.LEASE_TAG, Value="dead 2026-11-28T20:59:00Z")]
    assert pause_step.live_lease(tags, now) is None
    assert pause_step.live_lease([dict(Key=lease.LEASE_TAG, Value="alive 2026-11-28T21:00:30Z")], now)[0] == "alive"


def test_issue27_item3_request_summary_of_a_hand_written_tag():
    request = pause.parse_pause("please stop")
    assert pause.request_summary(request) == dict(requested=True, requested_at=None, requested_by="please stop")
    assert pause.request_summary(None)["requested"] is False


def test_issue27_item3_a_timed_out_wait_says_whether_it_wrote_the_request(world, run, monkeypatch):
    """Role abort_upgrade withdraws the request it wrote when it gives up waiting: the failure says it wrote it."""
    upgrading(world)
    monkeypatch.setattr(pause_step, "POLL_SECONDS", 0.2)
    result = run(wait=True, wait_timeout=1)
    assert result["failed"] is True and result["code"] == "WaitTimeout" and result["changed"] is True
    assert result["pause"]["requested"] is True and pause.PAUSE_TAG in world.tags()
    again = run(wait=True, wait_timeout=1)
    assert again["code"] == "WaitTimeout" and again["changed"] is False
