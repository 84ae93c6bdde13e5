# -*- coding: utf-8 -*-
# Copyright: Contributors to the eksops.nodegroup project
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""moto corrections (j) and (k) (eks_sandbox/aws/moto_patches.py) on their own, through boto3 against a started
AwsSim, with target groups and Classic ELBs the test makes itself (issue 11 item 3).

Expected behaviour, from AWS's documentation:
- Application Load Balancers user guide, "Deregistration delay": "The initial state of a deregistering target is
  draining. After the deregistration delay elapses, the deregistration process completes and the state of the target
  is unused"; the status is shown as draining "until the deregistration delay timeout expires".
- ELBv2 API reference, TargetHealth: draining -> Target.DeregistrationInProgress; unused -> Target.NotRegistered,
  Target.InvalidState ("The target is in the stopped or terminated state").
- Classic Load Balancers user guide, "Configure connection draining": a deregistering instance is reported as
  "InService: Instance deregistration currently in progress"; API reference InstanceState (descriptions quoted in
  moto_patches (k)).
"""

from __future__ import annotations

import time

import pytest

from eks_sandbox.aws import AwsSim
from eks_sandbox.faults import Faults
from eks_sandbox.recorder import Recorder
from eks_sandbox.scenario.loader import load_scenario

from harness import valid

TIMINGS = {"instance_pending_seconds": 0.05, "instance_shutdown_seconds": 0.05}
DELAY = 1


@pytest.fixture
def sim():
    scenario = load_scenario({
        "name": "lbpatches", "timings": TIMINGS,
        "amis": [{"name": "eks-node-1.29-v1", "kubernetes_version": "1.29"}],
        "nodegroups": [{"name": "workers", "ami": "eks-node-1.29-v1", "min_size": 1, "max_size": 6,
                        "desired_capacity": 2}],
    })
    with AwsSim(scenario, Recorder(), Faults([]), launch_retry_seconds=0.05) as started:
        started.seed("https://127.0.0.1:6443", None)
        yield started


def instance_ids(sim):
    return sorted(i["instance_id"] for i in sim.instances() if i["state"] == "running")


def vpc_and_subnets(sim):
    ec2 = sim.client("ec2")
    subnets = ec2.describe_subnets()["Subnets"]
    return subnets[0]["VpcId"], [s["SubnetId"] for s in subnets]


def target_group(sim, delay=DELAY):
    elbv2 = sim.client("elbv2")
    vpc_id, subnets = vpc_and_subnets(sim)
    arn = elbv2.create_target_group(Name="tg", Protocol="TCP", Port=30080, VpcId=vpc_id,
                                    TargetType="instance")["TargetGroups"][0]["TargetGroupArn"]
    elbv2.modify_target_group_attributes(TargetGroupArn=arn, Attributes=[
        {"Key": "deregistration_delay.timeout_seconds", "Value": str(delay)}])
    lb = elbv2.create_load_balancer(Name="nlb", Subnets=subnets, Type="network")["LoadBalancers"][0]
    elbv2.create_listener(LoadBalancerArn=lb["LoadBalancerArn"], Protocol="TCP", Port=80,
                          DefaultActions=[{"Type": "forward", "TargetGroupArn": arn}])
    return elbv2, arn


def health(elbv2, arn, **kwargs):
    answer = valid(elbv2, "DescribeTargetHealth", elbv2.describe_target_health(TargetGroupArn=arn, **kwargs))
    return {d["Target"]["Id"]: d["TargetHealth"] for d in answer["TargetHealthDescriptions"]}


def test_deregistered_target_drains_for_the_delay_then_leaves(sim):
    elbv2, arn = target_group(sim)
    first, second = instance_ids(sim)
    elbv2.register_targets(TargetGroupArn=arn, Targets=[{"Id": first}, {"Id": second}])
    assert {h["State"] for h in health(elbv2, arn).values()} == {"healthy"}
    began = time.monotonic()
    elbv2.deregister_targets(TargetGroupArn=arn, Targets=[{"Id": first}])
    listed = health(elbv2, arn)
    assert listed[first] == {"State": "draining", "Reason": "Target.DeregistrationInProgress",
                             "Description": "Target deregistration is in progress"}
    assert listed[second]["State"] == "healthy"
    assert health(elbv2, arn, Targets=[{"Id": first}])[first]["State"] == "draining"
    while first in health(elbv2, arn):
        assert time.monotonic() - began < DELAY + 1, "the target drained longer than the delay"
        time.sleep(0.05)
    assert time.monotonic() - began >= DELAY * 0.95
    # Gone from the listing; asked for by id, it is unused / not registered.
    assert health(elbv2, arn, Targets=[{"Id": first}])[first]["Reason"] == "Target.NotRegistered"


def test_zero_delay_leaves_at_once_and_registering_again_ends_draining(sim):
    elbv2, arn = target_group(sim, delay=0)
    first, second = instance_ids(sim)
    elbv2.register_targets(TargetGroupArn=arn, Targets=[{"Id": first}])
    elbv2.deregister_targets(TargetGroupArn=arn, Targets=[{"Id": first}])
    assert health(elbv2, arn) == {}
    elbv2.modify_target_group_attributes(TargetGroupArn=arn, Attributes=[
        {"Key": "deregistration_delay.timeout_seconds", "Value": "60"}])
    elbv2.register_targets(TargetGroupArn=arn, Targets=[{"Id": second}])
    elbv2.deregister_targets(TargetGroupArn=arn, Targets=[{"Id": second}])
    assert health(elbv2, arn)[second]["State"] == "draining"
    elbv2.register_targets(TargetGroupArn=arn, Targets=[{"Id": second}])
    assert health(elbv2, arn)[second]["State"] == "healthy"


def test_registered_instance_that_terminates_is_unused_invalid_state_and_stays(sim):
    elbv2, arn = target_group(sim)
    first, dummy = instance_ids(sim)
    elbv2.register_targets(TargetGroupArn=arn, Targets=[{"Id": first}])
    sim.client("ec2").terminate_instances(InstanceIds=[first])  # moto's own hook would make it draining for ever
    state = health(elbv2, arn)[first]
    assert (state["State"], state["Reason"]) == ("unused", "Target.InvalidState")
    time.sleep(DELAY + 0.2)
    assert health(elbv2, arn)[first]["State"] == "unused"  # still registered: nobody deregistered it


def classic(sim, draining):
    elb = sim.client("elb")
    dummy, subnets = vpc_and_subnets(sim)
    elb.create_load_balancer(LoadBalancerName="clb", Subnets=subnets, Listeners=[
        {"Protocol": "TCP", "LoadBalancerPort": 80, "InstancePort": 30080}])
    if draining:
        elb.modify_load_balancer_attributes(LoadBalancerName="clb", LoadBalancerAttributes={
            "ConnectionDraining": {"Enabled": True, "Timeout": draining}})
    return elb


def instance_health(elb, **kwargs):
    answer = valid(elb, "DescribeInstanceHealth", elb.describe_instance_health(LoadBalancerName="clb", **kwargs))
    return {s["InstanceId"]: s for s in answer["InstanceStates"]}


def test_classic_connection_draining_keeps_the_instance_in_service_for_the_timeout(sim):
    elb = classic(sim, draining=DELAY)
    first, second = instance_ids(sim)
    elb.register_instances_with_load_balancer(LoadBalancerName="clb", Instances=[
        {"InstanceId": first}, {"InstanceId": second}])
    began = time.monotonic()
    elb.deregister_instances_from_load_balancer(LoadBalancerName="clb", Instances=[{"InstanceId": first}])
    state = instance_health(elb)[first]
    assert (state["State"], state["Description"]) == ("InService", "Instance deregistration currently in progress.")
    assert instance_health(elb)[second]["Description"] == "N/A"
    while first in instance_health(elb):
        assert time.monotonic() - began < DELAY + 1
        time.sleep(0.05)
    assert time.monotonic() - began >= DELAY * 0.95
    # asked for by id once it has left: its state is still returned (API reference DescribeInstanceHealth)
    state = instance_health(elb, Instances=[{"InstanceId": first}])[first]
    assert (state["State"], state["Description"]) == ("OutOfService",
                                                      "Instance is not currently registered with the LoadBalancer.")


def test_classic_without_draining_drops_at_once_and_reports_a_terminated_instance(sim):
    elb = classic(sim, draining=None)
    first, second = instance_ids(sim)
    elb.register_instances_with_load_balancer(LoadBalancerName="clb", Instances=[
        {"InstanceId": first}, {"InstanceId": second}])
    elb.deregister_instances_from_load_balancer(LoadBalancerName="clb", Instances=[{"InstanceId": first}])
    assert first not in instance_health(elb)
    sim.client("ec2").terminate_instances(InstanceIds=[second])
    state = instance_health(elb)[second]
    assert (state["State"], state["ReasonCode"], state["Description"]) == (
        "OutOfService", "Instance", "Instance is in terminated state.")
    # asked for by id once deregistered, its state is still returned (API reference DescribeInstanceHealth)
    elb.deregister_instances_from_load_balancer(LoadBalancerName="clb", Instances=[{"InstanceId": second}])
    state = instance_health(elb, Instances=[{"InstanceId": second}])[second]
    assert (state["State"], state["Description"]) == ("OutOfService",
                                                      "Instance is not currently registered with the LoadBalancer.")
