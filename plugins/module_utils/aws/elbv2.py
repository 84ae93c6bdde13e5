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

from ansible_collections.eksops.nodegroup.plugins.module_utils.aws.session import aws_call
from ansible_collections.eksops.nodegroup.plugins.module_utils.aws.shapes import paginate, tags_in_chunks

# DescribeTags takes at most 20 resource ARNs (ELBv2 API reference, DescribeTags: "Maximum number of 20 items").
TAGS_PER_CALL = 20


@aws_call("describe the target groups")
def describe_target_groups(elbv2: Any) -> list[dict[str, Any]]:
    """Every target group of the account and region (all pages)."""
    return paginate(elbv2, "describe_target_groups", "TargetGroups")


@aws_call(lambda elbv2, arns: "describe the tags of %d target group(s)" % len(arns))
def describe_tags(elbv2: Any, arns: Sequence[str]) -> dict[str, dict[str, str]]:
    """{arn: {key: value}} for those ARNs, asked TAGS_PER_CALL at a time; no request for none."""
    return tags_in_chunks(elbv2.describe_tags, "ResourceArns", "ResourceArn", arns, TAGS_PER_CALL)


@aws_call("describe the targets of target group {arn}")
def describe_target_health(elbv2: Any, arn: str) -> list[dict[str, Any]]:
    """Every target of the group with its state, draining ones included (DescribeTargetHealth without Targets)."""
    return elbv2.describe_target_health(TargetGroupArn=arn)["TargetHealthDescriptions"]


@aws_call("describe the attributes of target group {arn}")
def describe_target_group_attributes(elbv2: Any, arn: str) -> dict[str, str]:
    """{key: value} of the group's attributes (deregistration_delay.timeout_seconds among them)."""
    attributes = elbv2.describe_target_group_attributes(TargetGroupArn=arn)["Attributes"]
    return dict((attribute["Key"], attribute.get("Value", "")) for attribute in attributes)
