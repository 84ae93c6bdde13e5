# -*- coding: utf-8 -*-
# Copyright: Contributors to the eksops.nodegroup project
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Issue 10 item 21: one run at a time on a node group, a lease on its Auto Scaling group (moto)."""

from __future__ import annotations

import datetime
from types import SimpleNamespace

import pytest
from moto import mock_aws

from ansible_collections.eksops.nodegroup.plugins.module_utils.nodegroup import lease
from ansible_collections.eksops.nodegroup.plugins.module_utils.errors import UpgradeError
from ansible_collections.eksops.nodegroup.plugins.module_utils.nodegroup.journal import Journal, clear_journal, write_journal

from ..moto_nodegroup import MotoNodegroup

NOW = datetime.datetime(2026, 11, 24, 6, 0, tzinfo=datetime.timezone.utc)


@pytest.fixture
def world():
    with mock_aws():
        yield MotoNodegroup(desired=2)


def module(lease_id, check_mode=False, **attributes):
    return SimpleNamespace(params={"lease_id": lease_id}, check_mode=check_mode, **attributes)


def put_lease(world, value):
    world.autoscaling.create_or_update_tags(Tags=[dict(ResourceId=world.asg_name, ResourceType="auto-scaling-group",
                                                       Key=lease.LEASE_TAG, Value=value, PropagateAtLaunch=False)])


def no_sleep(_seconds):
    return None


def test_parse_and_hold():
    value = lease.lease_value("run-a", now=NOW)
    holder, expires = lease.parse_lease(value)
    assert holder == "run-a" and expires == NOW + datetime.timedelta(seconds=lease.LEASE_SECONDS)
    assert lease.held_by_another((holder, expires), "run-b", now=NOW)
    assert not lease.held_by_another((holder, expires), "run-a", now=NOW)
    assert not lease.held_by_another((holder, expires), "run-b", now=expires + datetime.timedelta(seconds=1))
    assert lease.parse_lease("garbage") is None and lease.parse_lease("") is None


def test_a_free_lease_is_taken_and_read_back(world):
    heartbeat = lease.claim(module("run-a"), world.autoscaling, world.asg(), sleep=no_sleep)
    heartbeat.stop()
    assert lease.lease_of(world.asg()["Tags"])[0] == "run-a"
    assert lease.Heartbeat(world.autoscaling, world.asg_name, "run-a").beat() is True


def test_a_heartbeat_never_writes_back_a_lease_that_is_gone(world):
    """Cleared with the journal at the end of the restore, or deleted by a person who knows the run is dead."""
    lease.claim(module("run-a"), world.autoscaling, world.asg(), sleep=no_sleep).stop()
    clear_journal(world.autoscaling, world.asg_name)
    heartbeat = lease.Heartbeat(world.autoscaling, world.asg_name, "run-a")
    assert heartbeat.beat() is False and lease.lease_of(world.asg()["Tags"]) is None


def test_a_live_lease_of_another_run_is_refused_naming_its_run(world):
    write_journal(world.autoscaling, world.asg_name, Journal.start(run_id="r-first", phase="upgrade"))
    put_lease(world, lease.lease_value("run-a"))
    with pytest.raises(UpgradeError) as err:
        lease.claim(module("run-b"), world.autoscaling, world.asg(), sleep=no_sleep)
    assert err.value.code == "UpgradeInProgress"
    assert "r-first" in err.value.msg and "run-a" in err.value.msg and err.value.details["started_at"]
    # in check mode too, and nothing was written
    with pytest.raises(UpgradeError):
        lease.claim(module("run-b", check_mode=True), world.autoscaling, world.asg(), sleep=no_sleep)
    assert lease.lease_of(world.asg()["Tags"])[0] == "run-a"


def test_an_expired_lease_is_taken_over(world):
    put_lease(world, lease.lease_value("run-a", now=NOW - datetime.timedelta(hours=1)))
    lease.claim(module("run-b"), world.autoscaling, world.asg(), sleep=no_sleep).stop()
    assert lease.lease_of(world.asg()["Tags"])[0] == "run-b"


def test_of_two_runs_claiming_together_only_the_last_writer_goes_on(world):
    """The read-back after LEASE_SETTLE_SECONDS: run-b's write lands while run-a waits."""
    def other_run_writes(_seconds):
        put_lease(world, lease.lease_value("run-b"))

    with pytest.raises(UpgradeError) as err:
        lease.claim(module("run-a"), world.autoscaling, world.asg(), sleep=other_run_writes)
    assert err.value.code == "UpgradeInProgress" and err.value.details["lease_holder"] == "run-b"


def test_without_a_lease_id_nothing_is_claimed_or_checked(world):
    put_lease(world, lease.lease_value("run-a"))
    assert lease.claim(module(None), world.autoscaling, world.asg(), sleep=no_sleep) is None


def test_the_heartbeat_stops_when_another_run_took_the_lease(world):
    heartbeat = lease.claim(module("run-a"), world.autoscaling, world.asg(), sleep=no_sleep)
    heartbeat.stop()
    put_lease(world, lease.lease_value("run-b"))
    assert heartbeat.beat() is False and heartbeat.lost_to == "run-b"
    assert lease.lease_of(world.asg()["Tags"])[0] == "run-b"


def test_a_process_that_claims_step_after_step_writes_only_while_its_heartbeat_does_not(world):
    """The node_replace action claims before each batch's drain and termination: while its heartbeat renews the
    lease, a claim reads it (from the group the step read) and writes nothing; once the lease is not recently
    renewed, or another run holds it, the claim writes or refuses as the first one did."""
    writes = []
    world.autoscaling.meta.events.register("provide-client-params.autoscaling.CreateOrUpdateTags",
                                           lambda **kwargs: writes.append(1))
    step = module("run-a", lease_heartbeats={})
    heartbeat = lease.claim(step, world.autoscaling, world.asg(), sleep=no_sleep)
    try:
        assert len(writes) == 1
        assert lease.claim(step, world.autoscaling, world.asg(), sleep=no_sleep) is heartbeat and len(writes) == 1
        put_lease(world, lease.lease_value("run-a", now=NOW))  # renewed long ago: the heartbeat is failing
        writes.clear()
        assert lease.claim(step, world.autoscaling, world.asg(), sleep=no_sleep) is heartbeat and len(writes) == 1
        put_lease(world, lease.lease_value("run-b"))
        with pytest.raises(UpgradeError):
            lease.claim(step, world.autoscaling, world.asg(), sleep=no_sleep)
    finally:
        heartbeat.stop()


def test_release_only_our_own_and_the_journal_clear_removes_it(world):
    put_lease(world, lease.lease_value("run-a"))
    assert lease.release(world.autoscaling, world.asg(), "run-b") is False
    assert lease.release(world.autoscaling, world.asg(), "run-a") is True
    assert lease.lease_of(world.asg()["Tags"]) is None
    put_lease(world, lease.lease_value("run-a"))
    clear_journal(world.autoscaling, world.asg_name)
    assert lease.lease_of(world.asg()["Tags"]) is None
    assert Journal.from_tags(world.asg()["Tags"]) is None


@pytest.mark.parametrize("own, record, refused", [(42, False, False), (43, False, True), (41, True, False),
                                                  (42, True, True)])
def test_issue27_item1_w3_the_tag_budget_counts_a_failed_gate_record_only_while_the_group_holds_it(own, record,
                                                                                                   refused):
    """W3 with issue 27 item 1: the journal's tag of a failed health gate (eksops.nodegroup/health_gate) is written
    only when a gate fails and removed once a rerun judged it. The budget counted it always, so a group of 42 tags
    of its own, upgradable before, was refused; it counts 8 (the journal's six other tags, the lease, a pause
    request), and the record while the group holds it."""
    tags = [dict(Key="team/tag-%02d" % index, Value="x") for index in range(own)]
    tags += [dict(Key="eksops.nodegroup/run", Value="run_id=r;phase=upgrade")]
    if record:
        tags.append(dict(Key="eksops.nodegroup/health_gate", Value="Deployment default/web"))
    try:
        lease.check_tag_budget(dict(AutoScalingGroupName="workers", Tags=tags))
    except UpgradeError as raised:
        assert refused and raised.code == "TagLimitExceeded" and "Remove at least 1 of its tags" in raised.msg
        assert raised.details["tags_needed"] == (9 if record else 8)
    else:
        assert not refused
