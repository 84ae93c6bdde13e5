# -*- coding: utf-8 -*-
# Copyright: Contributors to the eksops.nodegroup project
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Classic Elastic Load Balancing API calls (the client is ``aws_client(params, "elb")``): the Classic Load
Balancers a node's instance may be registered with (SPEC B3).

Each function is one call, its errors translated by aws_call; what to make of an answer is the caller's.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from ansible_collections.eksops.nodegroup.plugins.module_utils.aws.session import aws_call
from ansible_collections.eksops.nodegroup.plugins.module_utils.aws.shapes import paginate, tags_in_chunks

# DescribeTags takes at most 20 load balancer names (ELB API reference, DescribeTags: "Maximum number of 20 items").
TAGS_PER_CALL = 20


@aws_call("describe the Classic Load Balancers")
def describe_load_balancers(elb: Any) -> list[dict[str, Any]]:
    """Every Classic Load Balancer of the account and region (all pages)."""
    return paginate(elb, "describe_load_balancers", "LoadBalancerDescriptions")


@aws_call(lambda elb, names: "describe the tags of %d Classic Load Balancer(s)" % len(names))
def describe_tags(elb: Any, names: Sequence[str]) -> dict[str, dict[str, str]]:
    """{name: {key: value}} for those load balancers, asked TAGS_PER_CALL at a time; no request for none."""
    return tags_in_chunks(elb.describe_tags, "LoadBalancerNames", "LoadBalancerName", names, TAGS_PER_CALL)


@aws_call("describe instances {instance_ids} of Classic Load Balancer {name}")
def describe_instance_health(elb: Any, name: str, instance_ids: Sequence[str]) -> list[dict[str, Any]]:
    """The state of those instances with respect to the load balancer, asked for by id: "their state is returned
    even if they are no longer registered" (API reference DescribeInstanceHealth; a listing without ids has only the
    registered ones). Draining: InService, "Instance deregistration currently in progress."; gone: OutOfService,
    "Instance is not currently registered with the LoadBalancer."."""
    return elb.describe_instance_health(LoadBalancerName=name, Instances=[dict(InstanceId=i) for i in instance_ids]
                                        )["InstanceStates"]


@aws_call("describe the attributes of Classic Load Balancer {name}")
def describe_load_balancer_attributes(elb: Any, name: str) -> dict[str, Any]:
    """The load balancer's attributes (ConnectionDraining among them)."""
    return elb.describe_load_balancer_attributes(LoadBalancerName=name)["LoadBalancerAttributes"]
