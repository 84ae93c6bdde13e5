# -*- coding: utf-8 -*-
# Copyright: Contributors to the eksops.nodegroup project
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Module upgrade_gate (issue 27 items 2-4) against moto: read-only; it passes an open safe point, stops on a pause
request (stopped=true) and an alarm in ALARM (not a stop: a failure), and refuses a bad window naming it."""

from __future__ import annotations

import boto3
import pytest
from moto import mock_aws

from ansible_collections.eksops.nodegroup.plugins.module_utils.nodegroup.pause import PAUSE_TAG
from ansible_collections.eksops.nodegroup.plugins.modules import upgrade_gate

from ..moto_nodegroup import CLUSTER, NODEGROUP, REGION, MotoNodegroup, run_module_in_process

BASE = dict(cluster_name=CLUSTER, nodegroup_name=NODEGROUP, where="before phase scale_down", expected_seconds=60)


@pytest.fixture
def world():
    with mock_aws():
        yield MotoNodegroup(desired=2)


@pytest.fixture
def run(capsys):
    def run_it(**args):
        return run_module_in_process(upgrade_gate.main, dict(BASE, **args), capsys)
    return run_it


def test_issue27_an_open_safe_point_passes_and_changes_nothing(world, run):
    before = world.asg()
    result = run(max_duration_seconds=3600)
    assert not result.get("failed") and result["changed"] is False, result
    assert result["gate"]["where"] == "before phase scale_down" and result["gate"]["deadline"]
    assert world.asg() == before


def test_issue27_item3_a_pause_request_stops_it_and_says_it_is_a_stop(world, run):
    world.autoscaling.create_or_update_tags(Tags=[dict(
        ResourceId=world.asg_name, ResourceType="auto-scaling-group", Key=PAUSE_TAG,
        Value="2026-11-28T21:00:00Z bob", PropagateAtLaunch=False)])
    result = run()
    assert result["failed"] and result["code"] == "UpgradePaused" and result["stopped"] is True, result
    assert result["stopped_at"] == "before phase scale_down"
    assert not run(check_pause=False).get("failed")


def test_issue27_item2_an_alarm_in_alarm_fails_it_without_being_a_stop(world, run):
    cloudwatch = boto3.client("cloudwatch", region_name=REGION)
    cloudwatch.put_metric_alarm(AlarmName="web-5xx", MetricName="5xx", Namespace="App", Statistic="Sum", Period=60,
                                EvaluationPeriods=1, Threshold=1.0, ComparisonOperator="GreaterThanThreshold")
    cloudwatch.set_alarm_state(AlarmName="web-5xx", StateValue="ALARM", StateReason="5xx")
    result = run(alarm_names=["web-5xx"])
    assert result["failed"] and result["code"] == "AlarmTriggered" and "stopped" not in result, result


def test_issue27_item4_a_window_that_cannot_be_read_is_refused_naming_it(world, run):
    result = run(maintenance_window=dict(start="22:00", end="4am"))
    assert result["failed"] and (result["code"], result["parameter"], result["field"]) == (
        "InvalidParameter", "maintenance_window", "end"), result
