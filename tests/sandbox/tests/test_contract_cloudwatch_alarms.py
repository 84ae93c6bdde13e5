# -*- coding: utf-8 -*-
# Copyright: Contributors to the eksops.nodegroup project
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Contract (boto3 against the sandbox's moto): the CloudWatch alarms a run watches (issue 27 item 2). Modelled from
the CloudWatch API reference: PutMetricAlarm creates an alarm in INSUFFICIENT_DATA; SetAlarmState "temporarily sets
the state of an alarm for testing purposes" (the state and its reason are what DescribeAlarms then answers, until
the next evaluation); PutMetricAlarm on an existing alarm leaves its state unchanged (moto_patches (r)); DescribeAlarms
with AlarmNames answers only the alarms that exist, an unknown name is no error.
The sandbox serves CloudWatch through moto's server like every other service, so a test (or a scenario) sets an
alarm's state as an operator's test would."""

from __future__ import annotations

import pytest

from eks_sandbox.scenario.loader import load_scenario

from harness import aws_running, valid


@pytest.fixture
def sim():
    with aws_running(load_scenario({
        "name": "alarms", "amis": [{"name": "eks-node-1.29-v1", "kubernetes_version": "1.29"}],
        "nodegroups": [{"name": "workers", "ami": "eks-node-1.29-v1", "min_size": 1, "max_size": 2,
                        "desired_capacity": 1}],
    })) as started:
        yield started


def states(cloudwatch, names):
    answer = valid(cloudwatch, "DescribeAlarms", cloudwatch.describe_alarms(
        AlarmNames=names, AlarmTypes=["MetricAlarm", "CompositeAlarm"]))
    return dict((a["AlarmName"], (a["StateValue"], a.get("StateReason"))) for a in answer["MetricAlarms"])


def test_an_alarm_is_created_insufficient_data_and_set_to_alarm_and_back_for_testing(sim):
    cloudwatch = sim.client("cloudwatch")
    cloudwatch.put_metric_alarm(AlarmName="api-5xx", MetricName="HTTPCode_Target_5XX_Count",
                                Namespace="AWS/ApplicationELB", Statistic="Sum", Period=60, EvaluationPeriods=1,
                                Threshold=10.0, ComparisonOperator="GreaterThanThreshold")
    assert states(cloudwatch, ["api-5xx"])["api-5xx"][0] == "INSUFFICIENT_DATA"
    cloudwatch.set_alarm_state(AlarmName="api-5xx", StateValue="ALARM", StateReason="5xx above 10 per minute")
    assert states(cloudwatch, ["api-5xx"]) == {"api-5xx": ("ALARM", "5xx above 10 per minute")}
    cloudwatch.put_metric_alarm(AlarmName="api-5xx", MetricName="HTTPCode_Target_5XX_Count",
                                Namespace="AWS/ApplicationELB", Statistic="Sum", Period=60, EvaluationPeriods=1,
                                Threshold=20.0, ComparisonOperator="GreaterThanThreshold")
    assert states(cloudwatch, ["api-5xx"]) == {"api-5xx": ("ALARM", "5xx above 10 per minute")}
    cloudwatch.set_alarm_state(AlarmName="api-5xx", StateValue="OK", StateReason="recovered")
    assert states(cloudwatch, ["api-5xx", "no-such-alarm"]) == {"api-5xx": ("OK", "recovered")}
