# -*- coding: utf-8 -*-
# Copyright: Contributors to the eksops.nodegroup project
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Elastic Load Balancing v2 API calls (the client is ``aws_client(params, "elbv2")``): the target groups a node's
instance may be registered with (SPEC B3).

Each function is one call, its errors translated by aws_call; what to make of an answer is the caller's.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from ansible_collections.eksops.nodegroup.plugins.module_utils.aws import aws_call, aws_tags_to_dict, paginate

# DescribeTags takes at most 20 resource ARNs (ELBv2 API reference, DescribeTags: "Maximum number of 20 items").
TAGS_PER_CALL = 20


@aws_call("describe the target groups")
def describe_target_groups(elbv2: Any) -> list[dict[str, Any]]:
    """Every target group of the account and region (all pages)."""
    return paginate(elbv2, "describe_target_groups", "TargetGroups")


@aws_call(lambda elbv2, arns: "describe the tags of %d target group(s)" % len(arns))
def describe_tags(elbv2: Any, arns: Sequence[str]) -> dict[str, dict[str, str]]:
    """{arn: {key: value}} for those ARNs, asked TAGS_PER_CALL at a time; no request for none."""
    tags = {}
    for start in range(0, len(arns), TAGS_PER_CALL):
        answer = elbv2.describe_tags(ResourceArns=list(arns[start:start + TAGS_PER_CALL]))
        for description in answer["TagDescriptions"]:
            tags[description["ResourceArn"]] = aws_tags_to_dict(description.get("Tags"))
    return tags


@aws_call("describe the targets of target group {arn}")
def describe_target_health(elbv2: Any, arn: str) -> list[dict[str, Any]]:
    """Every target of the group with its state, draining ones included (DescribeTargetHealth without Targets)."""
    return elbv2.describe_target_health(TargetGroupArn=arn)["TargetHealthDescriptions"]


@aws_call("describe the attributes of target group {arn}")
def describe_target_group_attributes(elbv2: Any, arn: str) -> dict[str, str]:
    """{key: value} of the group's attributes (deregistration_delay.timeout_seconds among them)."""
    attributes = elbv2.describe_target_group_attributes(TargetGroupArn=arn)["Attributes"]
    return dict((attribute["Key"], attribute.get("Value", "")) for attribute in attributes)
