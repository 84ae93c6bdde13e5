# -*- coding: utf-8 -*-
# Copyright: Contributors to the eksops.nodegroup project
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""module_utils/load_balancers (SPEC B3, issue 11 item 3): which of the cluster's load balancers hold an instance.

Driven through real boto3 clients with botocore's Stubber (the requests are checked against the service models),
with answers shaped as the ELB API references show them.
"""

from __future__ import annotations

import boto3
import pytest
from botocore.stub import Stubber

from ansible_collections.eksops.nodegroup.plugins.module_utils.errors import UpgradeError
from ansible_collections.eksops.nodegroup.plugins.module_utils.nodegroup.load_balancers import (
    ClusterLoadBalancers,
    describe_holders,
    find_cluster_load_balancers,
)

from ..fakes import FakeClock

ARN = "arn:aws:elasticloadbalancing:us-west-2:123456789012:targetgroup/%s/0123456789abcdef"


def clients():
    made = dict((service, boto3.client(service, region_name="us-west-2", aws_access_key_id="testing",
                                       aws_secret_access_key="testing")) for service in ("elbv2", "elb"))
    return made, dict((service, Stubber(client)) for service, client in made.items())


def group(name, target_type="instance"):
    return {"TargetGroupArn": ARN % name, "TargetGroupName": name, "TargetType": target_type}


def discovered(stubs, groups, group_tags, balancers, balancer_tags):
    stubs["elbv2"].add_response("describe_target_groups", {"TargetGroups": groups}, {})
    if groups:
        stubs["elbv2"].add_response("describe_tags", {"TagDescriptions": [
            {"ResourceArn": g["TargetGroupArn"], "Tags": t} for g, t in zip(groups, group_tags)]},
            {"ResourceArns": [g["TargetGroupArn"] for g in groups]})
    stubs["elb"].add_response("describe_load_balancers", {"LoadBalancerDescriptions": [
        {"LoadBalancerName": name} for name in balancers]}, {})
    if balancers:
        stubs["elb"].add_response("describe_tags", {"TagDescriptions": [
            {"LoadBalancerName": name, "Tags": t} for name, t in zip(balancers, balancer_tags)]},
            {"LoadBalancerNames": list(balancers)})


LBC = [{"Key": "elbv2.k8s.aws/cluster", "Value": "prod"}]
LBC_OTHER = [{"Key": "elbv2.k8s.aws/cluster", "Value": "staging"}]
IN_TREE = [{"Key": "kubernetes.io/cluster/prod", "Value": "owned"}]
IN_TREE_OTHER = [{"Key": "kubernetes.io/cluster/staging", "Value": "owned"}]


def test_discovery_keeps_the_load_balancers_tagged_for_the_cluster_only():
    made, stubs = clients()
    discovered(stubs, [group("web"), group("nlb"), group("other"), group("untagged")], [LBC, IN_TREE, LBC_OTHER, [{"Key": "team", "Value": "web"}]],
               ["classic", "classic-other", "lbc-tag-on-classic"], [IN_TREE, IN_TREE_OTHER, LBC])
    with stubs["elbv2"], stubs["elb"]:
        balancers = ClusterLoadBalancers.discover(made["elbv2"], made["elb"], "prod")
    assert [g["TargetGroupName"] for g in balancers.target_groups] == ["web", "nlb"]
    # The AWS Load Balancer Controller does not make Classic Load Balancers: its tag does not count on one.
    assert [b["LoadBalancerName"] for b in balancers.classic] == ["classic"]
    assert balancers.found
    assert balancers.describe() == "2 target group(s) (2 of instance targets) and 1 Classic Load Balancer(s)"


def test_a_cluster_without_load_balancers_asks_no_tags_and_finds_none():
    made, stubs = clients()
    discovered(stubs, [], [], [], [])
    with stubs["elbv2"], stubs["elb"]:
        balancers = ClusterLoadBalancers.discover(made["elbv2"], made["elb"], "prod")
    assert not balancers.found
    for stub in stubs.values():
        stub.assert_no_pending_responses()


def target(instance_id, state):
    return {"Target": {"Id": instance_id, "Port": 30080}, "TargetHealth": {"State": state}}


def test_holding_reads_instance_targets_and_classic_instances_with_their_delays():
    made, stubs = clients()
    balancers = ClusterLoadBalancers(made["elbv2"], made["elb"], [group("web"), group("pods", "ip"), group("api")],
                                     [{"LoadBalancerName": "classic"}])
    stubs["elbv2"].add_response("describe_target_health", {"TargetHealthDescriptions": [
        target("i-1", "draining"), target("i-2", "healthy"), target("i-3", "unused")]}, {"TargetGroupArn": ARN % "web"})
    stubs["elbv2"].add_response("describe_target_group_attributes", {"Attributes": [
        {"Key": "deregistration_delay.timeout_seconds", "Value": "20"}]}, {"TargetGroupArn": ARN % "web"})
    stubs["elbv2"].add_response("describe_target_health", {"TargetHealthDescriptions": [
        target("i-2", "unhealthy.draining")]}, {"TargetGroupArn": ARN % "api"})
    stubs["elbv2"].add_response("describe_target_group_attributes", {"Attributes": []}, {"TargetGroupArn": ARN % "api"})
    stubs["elb"].add_response("describe_instance_health", {"InstanceStates": [
        {"InstanceId": "i-1", "State": "InService", "ReasonCode": "N/A",
         "Description": "Instance deregistration currently in progress."},
        {"InstanceId": "i-2", "State": "OutOfService", "ReasonCode": "Instance",
         "Description": "Instance has failed at least the UnhealthyThreshold number of health checks consecutively."},
        {"InstanceId": "i-3", "State": "OutOfService", "ReasonCode": "ELB",
         "Description": "Instance is not currently registered with the LoadBalancer."}]},
        {"LoadBalancerName": "classic", "Instances": [{"InstanceId": i} for i in ("i-1", "i-2", "i-3", "i-4")]})
    stubs["elb"].add_response("describe_load_balancer_attributes", {"LoadBalancerAttributes": {
        "ConnectionDraining": {"Enabled": True, "Timeout": 5}}}, {"LoadBalancerName": "classic"})
    with stubs["elbv2"], stubs["elb"]:
        held = balancers.holding(["i-1", "i-2", "i-3", "i-4"])
    # the ip target group is never asked (its targets are pods); `unused` is not held (TargetHealth)
    assert held == {
        "i-1": [dict(kind="target group", name="web", state="draining", delay_seconds=20),
                dict(kind="Classic Load Balancer", name="classic", state="draining", delay_seconds=5)],
        "i-2": [dict(kind="target group", name="web", state="healthy", delay_seconds=20),
                dict(kind="target group", name="api", state="unhealthy.draining", delay_seconds=None),
                dict(kind="Classic Load Balancer", name="classic", state="OutOfService", delay_seconds=5)],
    }
    assert "i-3" not in held and "i-4" not in held
    assert describe_holders(held["i-1"]) == ("target group web (draining, deregistration delay 20 s), "
                                             "Classic Load Balancer classic (draining, deregistration delay 5 s)")
    for stub in stubs.values():
        stub.assert_no_pending_responses()


def test_answers_serve_every_node_for_a_second_and_delays_are_read_once():
    """The nodes of a batch ask side by side: one DescribeTargetHealth per target group and second serves them all."""
    made, stubs = clients()
    clock = FakeClock()
    balancers = ClusterLoadBalancers(made["elbv2"], made["elb"], [group("web")], [], clock=clock)
    stubs["elbv2"].add_response("describe_target_health", {"TargetHealthDescriptions": [
        target("i-1", "draining"), target("i-2", "healthy")]}, {"TargetGroupArn": ARN % "web"})
    stubs["elbv2"].add_response("describe_target_group_attributes", {"Attributes": [
        {"Key": "deregistration_delay.timeout_seconds", "Value": "300"}]}, {"TargetGroupArn": ARN % "web"})
    stubs["elbv2"].add_response("describe_target_health", {"TargetHealthDescriptions": [target("i-2", "draining")]},
                                {"TargetGroupArn": ARN % "web"})
    with stubs["elbv2"]:
        assert list(balancers.holding(["i-1"])) == ["i-1"]
        clock.advance(0.9)
        assert list(balancers.holding(["i-2"])) == ["i-2"]   # the same answer: no request
        clock.advance(0.1)
        assert balancers.holding(["i-1"]) == {}             # a new one: i-1 has left
        assert balancers.holding(["i-2"])["i-2"][0]["state"] == "draining"
    stubs["elbv2"].assert_no_pending_responses()


def test_a_load_balancer_seen_not_holding_an_instance_is_not_asked_about_it_again():
    """An excluded node's instance is not registered again: each poll asks only the load balancers that may still
    hold it (DescribeTargetHealth shares the ELB API's rate limits)."""
    made, stubs = clients()
    clock = FakeClock()
    balancers = ClusterLoadBalancers(made["elbv2"], made["elb"], [group("web"), group("api")],
                                     [{"LoadBalancerName": "classic"}], clock=clock)
    stubs["elbv2"].add_response("describe_target_health", {"TargetHealthDescriptions": [target("i-1", "draining")]},
                                {"TargetGroupArn": ARN % "web"})
    stubs["elbv2"].add_response("describe_target_group_attributes", {"Attributes": [
        {"Key": "deregistration_delay.timeout_seconds", "Value": "20"}]}, {"TargetGroupArn": ARN % "web"})
    stubs["elbv2"].add_response("describe_target_health", {"TargetHealthDescriptions": [target("i-1", "unused")]},
                                {"TargetGroupArn": ARN % "api"})
    stubs["elb"].add_response("describe_instance_health", {"InstanceStates": [
        {"InstanceId": "i-1", "State": "OutOfService", "ReasonCode": "N/A",
         "Description": "Instance is not currently registered with the LoadBalancer."}]},
        {"LoadBalancerName": "classic", "Instances": [{"InstanceId": "i-1"}]})
    # the second poll asks web only: api and classic were seen not holding i-1
    stubs["elbv2"].add_response("describe_target_health", {"TargetHealthDescriptions": []},
                                {"TargetGroupArn": ARN % "web"})
    with stubs["elbv2"], stubs["elb"]:
        assert [h["name"] for h in balancers.holding(["i-1"])["i-1"]] == ["web"]
        clock.advance(1)
        assert balancers.holding(["i-1"]) == {}
        clock.advance(1)
        assert balancers.holding(["i-1"]) == {}   # asks nobody
    for stub in stubs.values():
        stub.assert_no_pending_responses()


def test_a_target_group_whose_targets_may_not_be_read_is_named_and_the_others_still_answer():
    made, stubs = clients()
    balancers = ClusterLoadBalancers(made["elbv2"], made["elb"], [group("secret"), group("web")], [])
    stubs["elbv2"].add_client_error("describe_target_health", service_error_code="AccessDenied",
                                    service_message="not authorized to perform elasticloadbalancing:DescribeTargetHealth",
                                    http_status_code=403)
    stubs["elbv2"].add_response("describe_target_health", {"TargetHealthDescriptions": [target("i-1", "healthy")]},
                                {"TargetGroupArn": ARN % "web"})
    stubs["elbv2"].add_response("describe_target_group_attributes", {"Attributes": []}, {"TargetGroupArn": ARN % "web"})
    with stubs["elbv2"]:
        assert [h["name"] for h in balancers.holding(["i-1"])["i-1"]] == ["web"]
    assert list(balancers.unreadable) == ["secret"] and "DescribeTargetHealth" in balancers.unreadable["secret"]
    stubs["elbv2"].assert_no_pending_responses()


def test_access_denied_falls_back_to_the_fixed_wait_with_a_warning_and_other_errors_raise():
    made, stubs = clients()
    warnings = []
    stubs["elbv2"].add_client_error("describe_target_groups", service_error_code="AccessDenied",
                                    service_message="not authorized to perform elasticloadbalancing:DescribeTargetGroups",
                                    http_status_code=403)
    stubs["elbv2"].add_client_error("describe_target_groups", service_error_code="InternalFailure",
                                    service_message="boom", http_status_code=500)
    with stubs["elbv2"]:
        assert find_cluster_load_balancers(made.get, "prod", warnings.append) is None
        assert len(warnings) == 1 and "could not be listed" in warnings[0] and "fixed post_drain_wait" in warnings[0]
        with pytest.raises(UpgradeError) as raised:
            find_cluster_load_balancers(made.get, "prod", warnings.append)
    assert "describe the target groups" in raised.value.msg


def test_a_load_balancer_deleted_meanwhile_holds_nothing_and_the_discovery_is_retried():
    """A Service deleted (or a target group replaced) after the discovery: TargetGroupNotFound / LoadBalancerNotFound
    answer for it, and it holds nothing. One deleted between the listing and DescribeTags fails the tags call as a
    whole: the discovery starts again."""
    made, stubs = clients()
    balancers = ClusterLoadBalancers(made["elbv2"], made["elb"], [group("web")], [{"LoadBalancerName": "classic"}])
    stubs["elbv2"].add_client_error("describe_target_health", service_error_code="TargetGroupNotFound",
                                    service_message="gone", http_status_code=400)
    stubs["elb"].add_client_error("describe_instance_health", service_error_code="LoadBalancerNotFound",
                                  service_message="gone", http_status_code=400)
    with stubs["elbv2"], stubs["elb"]:
        assert balancers.holding(["i-1"]) == {}

    made, stubs = clients()
    stubs["elbv2"].add_response("describe_target_groups", {"TargetGroups": [group("web"), group("gone")]}, {})
    stubs["elbv2"].add_client_error("describe_tags", service_error_code="TargetGroupNotFound", service_message="gone",
                                    http_status_code=400)
    discovered(stubs, [group("web")], [LBC], [], [])
    with stubs["elbv2"], stubs["elb"]:
        found = ClusterLoadBalancers.discover(made["elbv2"], made["elb"], "prod")
    assert [g["TargetGroupName"] for g in found.target_groups] == ["web"]
    for stub in stubs.values():
        stub.assert_no_pending_responses()


def test_the_load_balancers_attached_to_the_auto_scaling_group_are_left_to_auto_scaling():
    """Auto Scaling deregisters an instance from the target groups and Classic Load Balancers attached to its group,
    and waits for their delay, when it terminates it; no controller does before. Waiting for them would time out."""
    made, stubs = clients()
    stubs["elbv2"].add_response("describe_target_groups", {"TargetGroups": [group("web"), group("attached")]}, {})
    stubs["elbv2"].add_response("describe_tags", {"TagDescriptions": [{"ResourceArn": ARN % "web", "Tags": LBC}]},
                                {"ResourceArns": [ARN % "web"]})   # the attached one is not even asked about
    stubs["elb"].add_response("describe_load_balancers", {"LoadBalancerDescriptions": [
        {"LoadBalancerName": "classic"}, {"LoadBalancerName": "attached-classic"}]}, {})
    stubs["elb"].add_response("describe_tags", {"TagDescriptions": [{"LoadBalancerName": "classic", "Tags": IN_TREE}]},
                              {"LoadBalancerNames": ["classic"]})
    asg = {"TargetGroupARNs": [ARN % "attached"], "LoadBalancerNames": ["attached-classic"]}
    with stubs["elbv2"], stubs["elb"]:
        found = find_cluster_load_balancers(made.get, "prod", [].append, asg)
    assert [g["TargetGroupName"] for g in found.target_groups] == ["web"]
    assert [b["LoadBalancerName"] for b in found.classic] == ["classic"]
