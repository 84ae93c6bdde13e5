# -*- coding: utf-8 -*-
# Copyright: Contributors to the eksops.nodegroup project
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Amazon CloudWatch API calls (the client is ``aws_client(params, "cloudwatch")``): the alarms a run watches
(issue 27 item 2).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from ansible_collections.eksops.nodegroup.plugins.module_utils.aws.session import aws_call

# DescribeAlarms takes at most 100 AlarmNames (CloudWatch API reference, DescribeAlarms, "AlarmNames": "Array
# Members: Maximum number of 100 items").
ALARM_NAMES_MAX = 100


@aws_call("describe CloudWatch alarms {alarm_names}")
def describe_alarms(cloudwatch: Any, alarm_names: Sequence[str]) -> list[dict[str, Any]]:
    """The metric and composite alarms named ``alarm_names`` (an unknown name is simply not in the answer)."""
    found = []
    paginator = cloudwatch.get_paginator("describe_alarms")
    for page in paginator.paginate(AlarmNames=list(alarm_names), AlarmTypes=["MetricAlarm", "CompositeAlarm"]):
        found.extend(page.get("MetricAlarms", []))
        found.extend(page.get("CompositeAlarms", []))
    return found
