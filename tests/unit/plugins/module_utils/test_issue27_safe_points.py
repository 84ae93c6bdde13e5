# -*- coding: utf-8 -*-
# Copyright: Contributors to the eksops.nodegroup project
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Issue 27 items 2-4: the maintenance window's arithmetic, and what the safe points check (alarms against moto's
CloudWatch, a pause request tag, the window and the run's time budget)."""

from __future__ import annotations

import datetime

import boto3
import pytest
from moto import mock_aws

from ansible_collections.eksops.nodegroup.plugins.module_utils.errors import UpgradeError
from ansible_collections.eksops.nodegroup.plugins.module_utils.gates.safe_points import SafePoints
from ansible_collections.eksops.nodegroup.plugins.module_utils.nodegroup.pause import PAUSE_TAG, parse_pause
from ansible_collections.eksops.nodegroup.plugins.module_utils.plan import maintenance_window as windows

UTC = datetime.timezone.utc


def at(text):
    return datetime.datetime.strptime(text, "%Y-%m-%d %H:%M").replace(tzinfo=UTC)


# 2026-11-28 is a Saturday.
WEEKEND_NIGHTS = dict(days=["sat", "sun"], start="22:00", end="04:00", time_zone="UTC")


@pytest.mark.parametrize("now, open_until", [
    ("2026-11-28 21:59", None),
    ("2026-11-28 22:00", "2026-11-29 04:00"),
    ("2026-11-29 03:59", "2026-11-29 04:00"),  # Saturday's window, still open on Sunday
    ("2026-11-29 04:00", None),
    ("2026-11-30 03:00", "2026-11-30 04:00"),  # Sunday's window crosses into Monday
    ("2026-11-30 22:30", None),  # Monday is not a day of the window
])
def test_issue27_item4_a_window_that_crosses_midnight_is_open_from_its_day_to_the_next(now, open_until):
    window = windows.parse_window(WEEKEND_NIGHTS)
    occurrence = window.open_at(at(now))
    assert (occurrence[1] if occurrence else None) == (at(open_until) if open_until else None)


def test_issue27_item4_the_next_opening_is_the_next_day_of_the_window():
    window = windows.parse_window(WEEKEND_NIGHTS)
    assert window.next_opening(at("2026-11-29 04:00")) == at("2026-11-29 22:00")
    assert window.next_opening(at("2026-11-30 04:00")) == at("2026-12-05 22:00")


def test_issue27_item4_local_hours_hold_across_a_daylight_saving_change():
    """Europe/Paris leaves summer time on 2026-10-25: 02:00 local is 00:00 UTC the day before, 01:00 UTC after."""
    window = windows.parse_window(dict(days=["sat", "sun"], start="02:00", end="05:00", time_zone="Europe/Paris"))
    assert window.open_at(at("2026-10-24 00:30"))[1] == at("2026-10-24 03:00")
    assert window.open_at(at("2026-10-25 01:30"))[1] == at("2026-10-25 04:00")


@pytest.mark.parametrize("spec, field", [
    (dict(start="25:00", end="04:00"), "start"),
    (dict(start="22:00"), "end"),
    (dict(start="22:00", end="04:00", days=["funday"]), "days"),
    (dict(start="22:00", end="04:00", time_zone="Mars/Olympus"), "time_zone"),
    (dict(start="22:00", end="04:00", timezone="UTC"), "timezone"),
])
def test_issue27_item4_a_window_that_cannot_be_read_is_refused_naming_its_key(spec, field):
    with pytest.raises(UpgradeError) as refused:
        SafePoints.from_params(dict(maintenance_window=spec))
    assert refused.value.code == "InvalidParameter" and refused.value.details["parameter"] == "maintenance_window"
    assert refused.value.details["field"] == field


def test_issue27_item4_work_starts_only_when_it_can_end_before_the_window_closes():
    gates = SafePoints([], windows.parse_window(WEEKEND_NIGHTS), None, now=lambda: at("2026-11-29 03:30"))
    assert gates.check_time("before batch 2", 1800) == at("2026-11-29 04:00")
    with pytest.raises(UpgradeError) as stopped:
        gates.check_time("before batch 3", 1801)
    assert stopped.value.code == "MaintenanceWindowClosed"
    assert stopped.value.details["next_window_opens"] == "2026-11-29T22:00:00Z"
    assert "Stopped before batch 3: the work could take 1801 s" in stopped.value.msg
    assert "closes at 2026-11-29T04:00:00Z" in stopped.value.msg


def test_issue27_item4_outside_the_window_nothing_starts_and_the_next_opening_is_said():
    gates = SafePoints([], windows.parse_window(WEEKEND_NIGHTS), None, now=lambda: at("2026-11-30 12:00"))
    with pytest.raises(UpgradeError) as stopped:
        gates.check("before phase setup", 0)
    assert stopped.value.details["stopped_by"] == windows.OUTSIDE_WINDOW
    assert "The next maintenance window opens at 2026-12-05T22:00:00Z (Sat 2026-12-05 22:00 UTC)" in stopped.value.msg


def test_issue27_item4_max_duration_counts_from_the_run_start_and_names_no_next_window():
    gates = SafePoints.from_params(dict(max_duration_seconds=3600, run_started_at="2026-11-28T10:00:00Z"),
                                   now=lambda: at("2026-11-28 10:50"))
    assert gates.check_time("before batch 4", 600) == at("2026-11-28 11:00")
    with pytest.raises(UpgradeError) as stopped:
        gates.check_time("before batch 5", 601)
    assert stopped.value.details["stopped_by"] == windows.RUN_BUDGET_ENDS
    assert stopped.value.details["next_window_opens"] is None and "max_duration_seconds" in stopped.value.msg


@pytest.mark.parametrize("name, value", [("max_duration_seconds", 0), ("run_started_at", "yesterday")])
def test_issue27_item4_a_bad_time_budget_is_refused_naming_it(name, value):
    params = dict(max_duration_seconds=60, run_started_at="2026-11-28T10:00:00Z")
    params[name] = value
    with pytest.raises(UpgradeError) as refused:
        SafePoints.from_params(params)
    assert refused.value.details["parameter"] == name


def alarm(cloudwatch, name, state, reason="Threshold Crossed"):
    cloudwatch.put_metric_alarm(AlarmName=name, MetricName="5xx", Namespace="App", Statistic="Sum", Period=60,
                                EvaluationPeriods=1, Threshold=1.0, ComparisonOperator="GreaterThanThreshold")
    cloudwatch.set_alarm_state(AlarmName=name, StateValue=state, StateReason=reason)


def test_issue27_item2_an_alarm_in_alarm_stops_the_run_naming_it_and_its_reason():
    with mock_aws():
        cloudwatch = boto3.client("cloudwatch", region_name="us-east-1")
        alarm(cloudwatch, "api-5xx", "OK")
        alarm(cloudwatch, "api-latency", "ALARM", "p99 above 2 s")
        gates = SafePoints.from_params(dict(alarm_names=["api-5xx", "api-latency"]), lambda: cloudwatch)
        with pytest.raises(UpgradeError) as stopped:
            gates.check("before batch 2", 0)
        assert stopped.value.code == "AlarmTriggered" and not stopped.value.details.get("stopped")
        assert [a["name"] for a in stopped.value.details["alarms"]] == ["api-latency"]
        assert "api-latency: p99 above 2 s" in stopped.value.msg
        cloudwatch.set_alarm_state(AlarmName="api-latency", StateValue="OK", StateReason="recovered")
        assert gates.check("before batch 2", 0) is None


def test_issue27_item2_an_alarm_cloudwatch_does_not_know_is_refused_before_any_change():
    with mock_aws():
        cloudwatch = boto3.client("cloudwatch", region_name="us-east-1")
        alarm(cloudwatch, "api-5xx", "OK")
        with pytest.raises(UpgradeError) as refused:
            SafePoints.from_params(dict(alarm_names=["api-5xx", "api-5xxx"]), lambda: cloudwatch)
    assert refused.value.details == dict(parameter="alarm_names", unknown_alarms=["api-5xxx"])


def test_issue27_item3_a_pause_request_on_the_group_stops_the_run_there():
    asg = dict(AutoScalingGroupName="workers", Tags=[dict(Key=PAUSE_TAG, Value="2026-11-28T21:00:00Z alice")])
    with pytest.raises(UpgradeError) as stopped:
        SafePoints([], None, None).check("before step 2", 0, asg)
    assert stopped.value.code == "UpgradePaused" and stopped.value.details["requested_by"] == "alice"
    assert stopped.value.msg.startswith("Paused before step 2, as asked at 2026-11-28T21:00:00Z by alice")


def test_issue27_item3_a_request_written_by_hand_without_a_time_is_still_a_request():
    assert parse_pause("please stop").requested_by == "please stop"
    assert parse_pause("2026-11-28T21:00:00Z").requested_by == ""


def test_issue27_item4_the_work_after_each_safe_point_is_bounded_by_the_run_timeouts():
    # drain 900 + post-drain 60 + termination 900; the surge strategy's step launches first (900).
    assert windows.batch_bound_seconds(900, 60, 900) == 1860
    assert windows.work_bound_seconds("start", False, 900, 60, 900, 0) == 900 + 1860
    assert windows.work_bound_seconds("scale_up", False, 900, 60, 900, 0) == 900 + 1860
    assert windows.work_bound_seconds("start", True, 900, 60, 900, 0) == 900 + 1860
    assert windows.work_bound_seconds("scale_down", False, 900, 60, 900, 0) == 1860
    assert windows.work_bound_seconds("start", False, 900, 60, 900, 660) == 900 + 1860 + 660


@pytest.mark.parametrize("soak, canary, canary_soak, zone, expected", [
    (0, False, 0, False, 0), (60, False, 0, False, 660), (0, True, 300, False, 900), (0, False, 0, True, 600),
    (60, True, 30, False, 660)])
def test_issue27_item1_a_gated_batch_may_wait_its_longest_soak_and_the_gate_timeout(
        soak, canary, canary_soak, zone, expected):
    assert windows.gate_bound_seconds(soak, canary, canary_soak, zone, 600) == expected


@pytest.mark.parametrize("name, params, expected", [
    ("max_duration_seconds", dict(max_duration_seconds=1800, run_started_at="2026-11-28T10:00:00Z"), 2760),
    ("maintenance_window", dict(maintenance_window=dict(start="22:00", end="22:30")), 2760)])
def test_issue27_item4_a_window_or_budget_that_no_run_could_go_on_in_is_an_input_error(name, params, expected):
    """Reviewer's finding: a 30-minute window under the default timeouts scaled the group up and stopped before batch 1
    in every window, green each time."""
    gates = SafePoints.from_params(params, now=lambda: at("2026-11-28 22:00"))
    with pytest.raises(UpgradeError) as refused:
        gates.check_time("before the upgrade starts", expected)
    assert refused.value.code == "InvalidParameter" and refused.value.details["parameter"] == name
    assert "leaves 1800 s, and the work before the upgrade starts may take 2760 s" in refused.value.msg


def test_issue27_item4_a_window_crossing_midnight_lasts_until_its_end_the_next_day():
    assert windows.parse_window(WEEKEND_NIGHTS).length_seconds() == 6 * 3600
    assert windows.parse_window(dict(days=["sat"], start="02:00", end="02:00")).length_seconds() == 24 * 3600
