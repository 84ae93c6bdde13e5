# -*- coding: utf-8 -*-
# Copyright: Contributors to the eksops.nodegroup project
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""The upgrade journal on ASG tags: encoding, limits, and the write/read/clear helpers."""

from __future__ import annotations

import datetime

import pytest
from hypothesis import given, strategies as st
from moto import mock_aws

from ansible_collections.eksops.nodegroup.plugins.module_utils.nodegroup import journal as jr
from ansible_collections.eksops.nodegroup.plugins.module_utils.errors import UpgradeError
from ansible_collections.eksops.nodegroup.plugins.module_utils.nodegroup.journal import Journal
from ansible_collections.eksops.nodegroup.plugins.module_utils.plan.workload_health import record_failed_gate

from ..moto_nodegroup import ASG_NAME, TERRAFORM, MotoNodegroup, self_managed_tags

FULL = dict(run_id="r1", phase="upgrade", strategy="rolling", started_at="2026-01-01T10:00:00Z",
            original_min_size=3, original_max_size=12, original_desired_capacity=6,
            previous_launch_template_version="1", target_launch_template_version="2",
            launch_template_id="lt-0abc", target_image_id="ami-0new",
            suspended_processes=["AZRebalance", "ReplaceUnhealthy"], desired_capacity_set=12, surge=6,
            schedule="once", start_per_az={"us-west-2a": 2, "us-west-2b": 1, "us-west-2c": 0})


def test_round_trip_through_tags():
    journal = Journal(**FULL)
    tags = journal.to_tags()
    assert list(tags) == ["eksops.nodegroup/" + name for name in
                          ("run", "sizes", "target", "suspended_processes", "start_per_az")]
    assert tags["eksops.nodegroup/run"] == ("run_id=r1;phase=upgrade;strategy=rolling;started_at=2026-01-01T10:00:00Z;"
                                            "schedule=once")
    assert tags["eksops.nodegroup/target"] == ("launch_template_id=lt-0abc;previous_launch_template_version=1;"
                                               "target_launch_template_version=2;target_image_id=ami-0new")
    assert tags["eksops.nodegroup/suspended_processes"] == "AZRebalance,ReplaceUnhealthy"
    assert Journal.from_tags(tags) == journal
    as_aws_list = [dict(Key=key, Value=value) for key, value in tags.items()]
    assert Journal.from_tags(as_aws_list) == journal


def test_b1_start_per_az_is_a_zone_count_tag_read_back_in_order():
    """SPEC B1: the instances per AZ before the scale-up, one tag ``az=count,az=count``."""
    tags = Journal(**FULL).to_tags()
    assert tags["eksops.nodegroup/start_per_az"] == "us-west-2a=2,us-west-2b=1,us-west-2c=0"
    back = Journal.from_tags(tags)
    assert list(back.start_per_az.items()) == [("us-west-2a", 2), ("us-west-2b", 1), ("us-west-2c", 0)]
    assert Journal(phase="setup").start_per_az is None


def test_unset_fields_are_not_written_and_read_back_as_none():
    journal = Journal(run_id="r1", phase="setup")
    assert journal.to_tags() == {"eksops.nodegroup/run": "run_id=r1;phase=setup",
                                 "eksops.nodegroup/suspended_processes": ""}
    back = Journal.from_tags(journal.to_tags())
    assert back.original_min_size is None and back.suspended_processes == []
    assert "eksops.nodegroup/sizes" in back.unset_tags()


def test_no_journal_tags_means_no_journal():
    assert Journal.from_tags([{"Key": "eks:cluster-name", "Value": "demo"}]) is None
    assert Journal.from_tags({}) is None
    assert Journal.from_tags(None) is None


def test_unknown_prefixed_tags_are_ignored():
    tags = {"eksops.nodegroup/run": "phase=setup", "eksops.nodegroup/from-the-future": "x"}
    assert Journal.from_tags(tags).to_dict()["phase"] == "setup"


@pytest.mark.parametrize("key, value", [
    ("eksops.nodegroup/sizes", "original_min_size=three"),
    ("eksops.nodegroup/run", "phase=exploding"),
    ("eksops.nodegroup/run", "phase:setup"),
    ("eksops.nodegroup/run", "phase=setup;colour=blue"),
    ("eksops.nodegroup/original_min_size", "three"),
    ("eksops.nodegroup/start_per_az", "us-west-2a:2"),
    ("eksops.nodegroup/start_per_az", "us-west-2a=two"),
    ("eksops.nodegroup/start_per_az", "us-west-2a=-1"),
])
def test_corrupt_tags_fail_clearly(key, value):
    with pytest.raises(UpgradeError) as raised:
        Journal.from_tags({key: value}, asg_name=ASG_NAME)
    assert raised.value.code == "InvalidParameter"
    assert key in raised.value.msg and ASG_NAME in raised.value.msg


def test_issue29_item2_the_journal_takes_seven_tags_whatever_it_records():
    """W3: the journal was one tag per field (18 with the lease's 19 of Auto Scaling's 50), so a group with more than
    31 tags of its own could not be upgraded; grouped, it takes seven (the seventh, issue 27 item 1, only while a
    failed health gate is not judged again), each within the 256 characters of a value."""
    fields = dict(FULL)
    fields.update(run_id="f" * 32, desired_capacity_pending=11, scale_in_protection="theirs",
                  launch_template_id="lt-0123456789abcdef0", target_image_id="ami-0123456789abcdef0",
                  previous_launch_template_version="123456", target_launch_template_version="123457",
                  suspended_processes=["AZRebalance", "AlarmNotification", "ScheduledActions", "ReplaceUnhealthy",
                                       "InstanceRefresh", "Launch", "Terminate", "HealthCheck", "AddToLoadBalancer"],
                  start_per_az=dict(("us-west-2%s" % zone, 999) for zone in "abcdef"),
                  sizes_set=dict(min_size=999, max_size=999), rollback_of="123457",
                  health_gate_failed=record_failed_gate(["Deployment ns-%02d/web-frontend" % n for n in range(40)],
                                                        jr.MAX_TAG_VALUE_LENGTH))
    longest = Journal(**fields)
    tags = longest.to_tags()
    assert len(tags) == len(jr.TAG_GROUPS) == 7 and max(len(value) for value in tags.values()) <= 256
    assert Journal.from_tags(tags) == longest


@mock_aws
def test_a_journal_an_earlier_release_wrote_is_read_and_replaced_at_the_next_write():
    """A group left mid-upgrade by the one-tag-per-field release resumes: its journal is read, and the next write
    replaces those tags with the grouped ones."""
    world = MotoNodegroup()
    old = dict(("eksops.nodegroup/" + name, value) for name, value in (
        ("run_id", "r1"), ("phase", "upgrade"), ("original_desired_capacity", "6"), ("surge", "6"),
        ("target_launch_template_version", "2"), ("suspended_processes", "AZRebalance")))
    world.autoscaling.create_or_update_tags(Tags=[dict(ResourceId=ASG_NAME, ResourceType="auto-scaling-group",
                                                       Key=key, Value=value, PropagateAtLaunch=False)
                                                  for key, value in old.items()])
    journal = jr.read_journal(world.autoscaling, ASG_NAME)
    assert (journal.phase, journal.surge, journal.suspended_processes) == ("upgrade", 6, ["AZRebalance"])
    jr.write_journal(world.autoscaling, ASG_NAME, journal.replace(phase="scale_down"), previous=journal)
    assert sorted(key for key in world.tags() if key.startswith("eksops.nodegroup/")) == [
        "eksops.nodegroup/run", "eksops.nodegroup/sizes", "eksops.nodegroup/suspended_processes",
        "eksops.nodegroup/target"]
    assert jr.read_journal(world.autoscaling, ASG_NAME) == journal.replace(phase="scale_down")


def test_fields_are_checked():
    with pytest.raises(TypeError):
        Journal(phase="setup", colour="blue")
    with pytest.raises(ValueError):
        Journal(phase="done")


def test_values_over_the_aws_limit_are_refused():
    journal = Journal(phase="setup", suspended_processes=["P%03d" % i for i in range(100)])
    with pytest.raises(UpgradeError) as raised:
        journal.to_tags()
    assert raised.value.code == "ApiError" and raised.value.details["journal_field"] == "suspended_processes"


def test_start_fills_run_id_and_utc_timestamp():
    now = datetime.datetime(2026, 3, 4, 5, 6, 7, tzinfo=datetime.timezone(datetime.timedelta(hours=2)))
    journal = Journal.start(now=now, target_image_id="ami-1")
    assert journal.phase == "setup"
    assert journal.started_at == "2026-03-04T03:06:07Z"
    assert len(journal.run_id) == 16
    assert Journal.start(run_id="mine").run_id == "mine"
    assert Journal.start().run_id != Journal.start().run_id


def test_replace_and_targets():
    journal = Journal(**FULL)
    moved = journal.replace(phase="scale_down")
    assert moved.phase == "scale_down" and journal.phase == "upgrade"
    assert journal.targets("lt-0abc", 2) and journal.targets("lt-0abc", "2")
    assert not journal.targets("lt-0abc", 3)
    assert not journal.targets("lt-other", 2)


@given(st.builds(
    Journal,
    run_id=st.text(alphabet="abcdef0123456789", min_size=1, max_size=32),
    phase=st.sampled_from(jr.PHASES),
    original_min_size=st.none() | st.integers(0, 10000),
    original_desired_capacity=st.none() | st.integers(0, 10000),
    suspended_processes=st.lists(st.sampled_from(["AZRebalance", "AlarmNotification", "ScheduledActions",
                                                  "ReplaceUnhealthy"]), unique=True),
    target_launch_template_version=st.none() | st.integers(1, 10 ** 6).map(str),
    surge=st.none() | st.integers(0, 100),
    schedule=st.none() | st.sampled_from(["once", "eks"]),
    start_per_az=st.none() | st.dictionaries(st.from_regex(r"[a-z]{2}-[a-z]+-[0-9][a-z]", fullmatch=True),
                                             st.integers(0, 100), max_size=6),
))
def test_any_journal_survives_the_round_trip(journal):
    assert Journal.from_tags(journal.to_tags()) == journal


@mock_aws
def test_write_read_and_clear_on_an_asg():
    world = MotoNodegroup()
    jr.write_journal(world.autoscaling, ASG_NAME, Journal(**FULL))
    assert jr.read_journal(world.autoscaling, ASG_NAME) == Journal(**FULL)
    # Later phases rewrite the journal; a field set back to None disappears from the ASG.
    jr.write_journal(world.autoscaling, ASG_NAME, Journal(**FULL).replace(desired_capacity_set=None, phase="scale_down"))
    assert "desired_capacity_set" not in world.tags()["eksops.nodegroup/sizes"]
    assert jr.read_journal(world.autoscaling, ASG_NAME).phase == "scale_down"
    removed = jr.clear_journal(world.autoscaling, ASG_NAME)
    assert "eksops.nodegroup/run" in removed
    assert jr.read_journal(world.autoscaling, ASG_NAME) is None
    # The node group's own tags are untouched.
    assert world.tags() == self_managed_tags(TERRAFORM)


class RecordingAutoscaling:
    def __init__(self):
        self.calls = []

    def create_or_update_tags(self, Tags):
        self.calls.append(("create_or_update_tags", sorted(tag["Key"] for tag in Tags)))

    def delete_tags(self, Tags):
        self.calls.append(("delete_tags", sorted(tag["Key"] for tag in Tags)))


def test_write_with_a_known_previous_journal_deletes_only_what_it_drops():
    autoscaling = RecordingAutoscaling()
    jr.write_journal(autoscaling, ASG_NAME, Journal(run_id="r", phase="setup"), previous=Journal())
    assert [name for name, _keys in autoscaling.calls] == ["create_or_update_tags"]
    autoscaling.calls = []
    jr.write_journal(autoscaling, ASG_NAME, Journal(run_id="r", phase="upgrade"),
                     previous=Journal(run_id="r", phase="scale_up", surge=6))
    assert autoscaling.calls[-1] == ("delete_tags", ["eksops.nodegroup/sizes"])
    autoscaling.calls = []
    # Unknown previous: every tag not written, and an earlier release's one-tag-per-field journal.
    jr.write_journal(autoscaling, ASG_NAME, Journal(run_id="r", phase="upgrade"))
    deleted = autoscaling.calls[-1][1]
    assert {"eksops.nodegroup/sizes", "eksops.nodegroup/target", "eksops.nodegroup/start_per_az",
            "eksops.nodegroup/phase", "eksops.nodegroup/surge"} <= set(deleted)
    assert "eksops.nodegroup/run" not in deleted and "eksops.nodegroup/suspended_processes" not in deleted
    assert len(deleted) <= 25  # DeleteTags takes at most 25 tags


@pytest.mark.parametrize("desired_now,original_after", [(14, 8), (12, 6), (9, 6), (4, 4)])
def test_an_accepted_capacity_moves_the_size_the_group_returns_to(desired_now, original_after):
    """Issue 10 item 23: a raise (the autoscaler) is kept on top of the original 6; a lower value is the size
    wanted at the end when below it."""
    journal = Journal(run_id="r", original_desired_capacity=6, desired_capacity_set=12, desired_capacity_pending=11)
    adopted = journal.adopt_desired_capacity(desired_now)
    assert (adopted.original_desired_capacity, adopted.desired_capacity_set, adopted.desired_capacity_pending) == (
        original_after, desired_now, None)


def stubbed_autoscaling():
    """A real botocore Auto Scaling client whose answers the Stubber gives (no endpoint is reached)."""
    import boto3
    from botocore.stub import Stubber

    client = boto3.client("autoscaling", region_name="us-west-2", aws_access_key_id="testing",
                          aws_secret_access_key="testing")
    return client, Stubber(client)


ACCESS_DENIED_MESSAGE = ("User: arn:aws:sts::123456789012:assumed-role/upgrader/run is not authorized to perform: "
                         "autoscaling:CreateOrUpdateTags")


@pytest.mark.parametrize("call, operation, doing", [
    (lambda client: jr.write_journal(client, ASG_NAME, Journal(run_id="r7", phase="setup")),
     "create_or_update_tags", "set tags eksops.nodegroup/run, eksops.nodegroup/suspended_processes"),
    (lambda client: jr.read_journal(client, ASG_NAME), "describe_auto_scaling_groups", "describe Auto Scaling group"),
    (lambda client: jr.clear_journal(client, ASG_NAME), "describe_auto_scaling_groups", "describe Auto Scaling group"),
])
def test_issue12_an_aws_error_in_the_journal_is_an_upgrade_error_with_a_code(call, operation, doing):
    """Issue 12 (SPEC U8): each journal function translates its own AWS errors, so no caller needs a
    translate_aws_errors around it and none ends in a traceback: AccessDenied on the ASG's tags is AccessDenied,
    the message names the call, the journal's tags and the group."""
    client, stubber = stubbed_autoscaling()
    stubber.add_client_error(operation, service_error_code="AccessDenied", service_message=ACCESS_DENIED_MESSAGE,
                             http_status_code=403)
    with stubber, pytest.raises(UpgradeError) as raised:
        call(client)
    err = raised.value
    assert err.code == "AccessDenied"
    assert err.details["aws_error_code"] == "AccessDenied"
    assert err.msg.startswith(doing) and ("Auto Scaling group %s failed" % ASG_NAME) in err.msg, err.msg
    assert ACCESS_DENIED_MESSAGE in err.msg


def test_issue12_a_failed_delete_of_dropped_fields_is_translated_too():
    """The second call of write_journal (DeleteTags of the fields the new journal drops) is under the same
    translation as the first."""
    client, stubber = stubbed_autoscaling()
    stubber.add_response("create_or_update_tags", {})
    stubber.add_client_error("delete_tags", service_error_code="Throttling", service_message="Rate exceeded",
                             http_status_code=400)
    with stubber, pytest.raises(UpgradeError) as raised:
        jr.write_journal(client, ASG_NAME, Journal(run_id="r", phase="upgrade"),
                         previous=Journal(run_id="r", phase="scale_up", surge=6))
    assert raised.value.details["aws_operation"] == "DeleteTags"
    assert "delete tags eksops.nodegroup/sizes from Auto Scaling group %s" % ASG_NAME in raised.value.msg


@pytest.mark.parametrize("current,wanted,expected", [
    (None, "scale_up", "scale_up"), ("setup", "scale_up", "scale_up"), ("upgrade", "scale_up", "upgrade"),
    ("scale_up", "upgrade", "upgrade"), ("scale_up", "scale_down", "scale_down"), ("scale_down", "setup", "scale_down")])
def test_the_phase_never_moves_backwards(current, wanted, expected):
    journal = Journal(run_id="r", phase=current, surge=2).advanced(wanted, desired_capacity_set=7)
    assert (journal.phase, journal.surge, journal.desired_capacity_set) == (expected, 2, 7)


def test_a_retarget_goes_back_to_setup_and_keeps_what_describes_the_group():
    """force_new_target: the one move back to setup; the original sizes, processes, run id and the version before
    the upgrade stay."""
    journal = Journal(run_id="r", phase="upgrade", original_desired_capacity=5, suspended_processes=["AZRebalance"],
                      launch_template_id="lt-1", target_launch_template_version="4", target_image_id="ami-4",
                      previous_launch_template_version="3")
    again = journal.retargeted("lt-1", "6", "ami-6", "5")
    assert (again.phase, again.target_launch_template_version, again.target_image_id) == ("setup", "6", "ami-6")
    assert (again.run_id, again.original_desired_capacity, again.suspended_processes) == ("r", 5, ["AZRebalance"])
    assert again.previous_launch_template_version == "3"
    assert Journal(run_id="r", phase="setup").retargeted("lt-1", "6", "ami-6", "5").previous_launch_template_version == "5"
