# -*- coding: utf-8 -*-
# Copyright: Contributors to the eksops.nodegroup project
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""node_drain waits a drained node out of the cluster's load balancers (SPEC B3, issue 11 item 3), against the
sandbox scenario `load_balancers`: target groups with deregistration delays of 5 s and 20 s (the AWS Load Balancer
Controller's), and a Classic ELB without connection draining (the in-tree service controller's)."""

from __future__ import annotations

import time

from sandbox_helpers import module_sandbox, run_module

SLOW_GROUP = "k8s-payments-api-20s"


lb_sandbox = module_sandbox("load_balancers")


def group_instances(sandbox):
    autoscaling = sandbox.client("autoscaling")
    [group] = autoscaling.describe_auto_scaling_groups()["AutoScalingGroups"]
    return group["AutoScalingGroupName"], sorted(i["InstanceId"] for i in group["Instances"])


def target_state(sandbox, group_name, instance_id):
    elbv2 = sandbox.client("elbv2")
    [group] = elbv2.describe_target_groups(Names=[group_name])["TargetGroups"]
    states = [t["TargetHealth"]["State"] for t in
              elbv2.describe_target_health(TargetGroupArn=group["TargetGroupArn"])["TargetHealthDescriptions"]
              if t["Target"]["Id"] == instance_id]
    return states[0] if states else None


def drain(sandbox, instance_id, **options):
    asg_name = group_instances(sandbox)[0]
    args = dict(cluster_name="load-balancers", nodegroup_name="workers", asg_name=asg_name,
                instance_ids=[instance_id], delete_options=dict(wait_timeout=60), **options)
    return run_module(sandbox, "node_drain", args)


def test_B3_still_draining_after_post_drain_wait_fails_naming_the_target_group_then_a_rerun_goes_on(lb_sandbox):
    instance_id = group_instances(lb_sandbox)[1][0]
    assert target_state(lb_sandbox, SLOW_GROUP, instance_id) == "healthy"
    failed = drain(lb_sandbox, instance_id, post_drain_wait=3)
    assert failed["failed"] and failed["code"] == "LoadBalancerDeregistrationTimeout", failed
    assert "target group %s (draining, deregistration delay 20 s)" % SLOW_GROUP in failed["msg"]
    [node] = failed["drain"]["instances"].values()
    assert lb_sandbox.core_v1().read_node(node).spec.unschedulable
    assert target_state(lb_sandbox, SLOW_GROUP, instance_id) == "draining"

    started = time.monotonic()
    resumed = drain(lb_sandbox, instance_id, post_drain_wait=60)
    assert not resumed.get("failed"), resumed
    assert time.monotonic() - started < 45  # ended when the target group let go, not at the bound
    assert target_state(lb_sandbox, SLOW_GROUP, instance_id) is None
    assert SLOW_GROUP in resumed["drain"]["nodes"][node]["load_balancers"]
    assert resumed["drain"]["nodes"][node]["post_drain_waited_seconds"] < 60


def test_B3_ignore_load_balancer_timeout_lets_the_node_go_with_a_warning(lb_sandbox):
    instance_id = group_instances(lb_sandbox)[1][1]
    result = drain(lb_sandbox, instance_id, post_drain_wait=1, ignore_load_balancer_timeout=True)
    assert not result.get("failed"), result
    assert any("terminated anyway (ignore_load_balancer_timeout)" in w and SLOW_GROUP in w
               for w in result.get("warnings", [])), result.get("warnings")
    assert target_state(lb_sandbox, SLOW_GROUP, instance_id) == "draining"
