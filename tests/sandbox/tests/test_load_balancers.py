# -*- coding: utf-8 -*-
# Copyright: Contributors to the eksops.nodegroup project
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Contract (boto3 against the sandbox's AWS endpoint, the kubernetes python client against its API server): the
scenario's load balancers and the controllers that put nodes behind them (issue 11 item 3; eks_sandbox/
lb_controllers.py, aws/load_balancers.py, moto_patches (j) and (k)).

Expected behaviour, from the sources named in lb_controllers.py and aws/load_balancers.py:
- the AWS Load Balancer Controller tags its target groups `elbv2.k8s.aws/cluster: <cluster>` (pkg/deploy/tracking/
  provider.go), registers the instances of Ready nodes, and drops a node labelled
  `node.kubernetes.io/exclude-from-external-load-balancers` (any value) or tainted `ToBeDeletedByClusterAutoscaler`
  (pkg/backend/endpoint_utils.go); a cordoned node stays (v2.1.1, #1688);
- the in-tree service controller tags its Classic ELBs `kubernetes.io/cluster/<cluster>: owned` (cloud-provider-aws
  tags.go) and drops a node with the same label (k8s.io/cloud-provider controllers/service, stableNodeSetPredicates);
- a deregistered target is `draining` / Target.DeregistrationInProgress for the deregistration delay, then it is gone
  (ALB user guide "Deregistration delay"); a Classic ELB instance is InService "Instance deregistration currently in
  progress." for the connection draining timeout (Classic user guide "Configure connection draining").
"""

from __future__ import annotations

import time

import kubernetes
import pytest

from eks_sandbox.kube.testing import scenario
from harness import EKS_CLUSTER, OLD_AMI, client, running, valid, wait_for

EXCLUDE = "node.kubernetes.io/exclude-from-external-load-balancers"
# The slow delay outlasts the fast one by 3 s: the test asks between the two ends, on a machine that may be busy.
# The Classic ELB drains 3 s: the test reads its draining state after two target group reads, which a loaded machine
# (make test runs the unit tests beside) once stretched past a 1 s drain.
FAST, SLOW, CLASSIC_DRAINING = 1, 4, 3


@pytest.fixture(scope="module")
def sandbox():
    loaded = scenario(
        **EKS_CLUSTER,
        nodegroups=[{"name": "workers", "ami": OLD_AMI, "min_size": 1, "max_size": 8, "desired_capacity": 5},
                    {"name": "batch", "ami": OLD_AMI, "min_size": 1, "max_size": 2, "desired_capacity": 1}],
        load_balancers=[
            {"name": "web-fast", "deregistration_delay": FAST, "nodegroups": ["workers"], "service": "default/web"},
            {"name": "web-slow", "deregistration_delay": SLOW, "nodegroups": ["workers"], "service": "default/api"},
            {"name": "pods-ip", "target_type": "ip", "deregistration_delay": FAST, "service": "default/pods"},
            {"name": "legacy", "type": "classic", "deregistration_delay": CLASSIC_DRAINING,
             "nodegroups": ["workers"], "service": "default/legacy"}])
    with running(loaded) as started:
        started.core = kubernetes.client.CoreV1Api(
            kubernetes.config.new_client_from_config(str(started.kubeconfig_path)))
        yield started


def cluster_target_groups(sandbox):
    """What a client does to find the cluster's target groups: list them, read their tags, keep the cluster's."""
    elbv2 = client(sandbox, "elbv2")
    groups = valid(elbv2, "DescribeTargetGroups", elbv2.describe_target_groups())["TargetGroups"]
    tags = elbv2.describe_tags(ResourceArns=[g["TargetGroupArn"] for g in groups])["TagDescriptions"]
    ours = {t["ResourceArn"] for t in tags if {"Key": "elbv2.k8s.aws/cluster", "Value": "eks"} in t["Tags"]}
    return {g["TargetGroupName"]: g for g in groups if g["TargetGroupArn"] in ours}


def target_health(sandbox, name):
    elbv2 = client(sandbox, "elbv2")
    arn = cluster_target_groups(sandbox)[name]["TargetGroupArn"]
    answer = valid(elbv2, "DescribeTargetHealth", elbv2.describe_target_health(TargetGroupArn=arn))
    return {d["Target"]["Id"]: d["TargetHealth"] for d in answer["TargetHealthDescriptions"]}


def classic_health(sandbox):
    elb = client(sandbox, "elb")
    answer = valid(elb, "DescribeInstanceHealth", elb.describe_instance_health(LoadBalancerName="legacy"))
    return {s["InstanceId"]: s for s in answer["InstanceStates"]}


def nodes_by_instance(sandbox, nodegroup="workers"):
    """{instance id: node name} of the Ready nodes of a node group (by providerID; the group from EC2)."""
    group_of = {i["instance_id"]: i["nodegroup"] for i in sandbox.aws.instances() if i["state"] == "running"}
    found = {}
    for node in sandbox.core.list_node().items:
        instance_id = node.spec.provider_id.rsplit("/", 1)[-1]
        ready = any(c.type == "Ready" and c.status == "True" for c in node.status.conditions or ())
        if group_of.get(instance_id) == nodegroup and ready:
            found[instance_id] = node.metadata.name
    return found


# The nodes tests have taken: the sandbox is the module's, and each test takes its own node.
TAKEN_NODES: set = set()


def unused_node(sandbox):
    """A workers node no test has touched yet (each test takes its own)."""
    for instance_id, name in sorted(nodes_by_instance(sandbox).items()):
        if instance_id not in TAKEN_NODES:
            TAKEN_NODES.add(instance_id)
            return instance_id, name
    raise AssertionError("no untouched node left")


def test_target_groups_found_by_tag_with_their_attributes_and_load_balancers(sandbox):
    groups = cluster_target_groups(sandbox)
    assert set(groups) == {"web-fast", "web-slow", "pods-ip"}
    elbv2 = client(sandbox, "elbv2")
    for name, delay in (("web-fast", FAST), ("web-slow", SLOW)):
        group = groups[name]
        assert (group["TargetType"], group["Protocol"], group["Port"]) == ("instance", "TCP", 30080)
        assert len(group["LoadBalancerArns"]) == 1
        attributes = {a["Key"]: a["Value"] for a in elbv2.describe_target_group_attributes(
            TargetGroupArn=group["TargetGroupArn"])["Attributes"]}
        assert attributes["deregistration_delay.timeout_seconds"] == str(delay)
        tags = {t["Key"]: t["Value"] for t in elbv2.describe_tags(
            ResourceArns=[group["TargetGroupArn"]])["TagDescriptions"][0]["Tags"]}
        assert tags["service.k8s.aws/stack"] in ("default/web", "default/api")
        assert tags["service.k8s.aws/resource"] == tags["service.k8s.aws/stack"] + ":80"
    assert groups["pods-ip"]["TargetType"] == "ip"
    # The Resource Groups Tagging API finds them by the same tag.
    tagging = client(sandbox, "resourcegroupstaggingapi")
    found = tagging.get_resources(TagFilters=[{"Key": "elbv2.k8s.aws/cluster", "Values": ["eks"]}],
                                  ResourceTypeFilters=["elasticloadbalancing:targetgroup"])
    assert {r["ResourceARN"] for r in found["ResourceTagMappingList"]} == {
        g["TargetGroupArn"] for g in groups.values()}
    elb = client(sandbox, "elb")
    tags = elb.describe_tags(LoadBalancerNames=["legacy"])["TagDescriptions"][0]["Tags"]
    assert {"Key": "kubernetes.io/cluster/eks", "Value": "owned"} in tags
    assert {"Key": "kubernetes.io/service-name", "Value": "default/legacy"} in tags
    draining = elb.describe_load_balancer_attributes(LoadBalancerName="legacy")["LoadBalancerAttributes"][
        "ConnectionDraining"]
    assert draining == {"Enabled": True, "Timeout": CLASSIC_DRAINING}


def in_service_nodes(sandbox):
    """Ready workers nodes that no test excluded (label or autoscaler taint; a cordon does not count)."""
    excluded = {n.spec.provider_id.rsplit("/", 1)[-1] for n in sandbox.core.list_node().items
                if EXCLUDE in (n.metadata.labels or {})
                or any(t.key == "ToBeDeletedByClusterAutoscaler" for t in n.spec.taints or ())}
    return set(nodes_by_instance(sandbox)) - excluded


def test_ready_nodes_of_the_fronted_node_groups_are_healthy_targets(sandbox):
    workers = in_service_nodes(sandbox)  # the five workers, less any another test of this module excluded
    assert workers
    for name in ("web-fast", "web-slow"):
        health = target_health(sandbox, name)
        healthy = {i for i, h in health.items() if h["State"] == "healthy"}
        assert healthy == workers  # the batch node group is not fronted
    assert target_health(sandbox, "pods-ip") == {}  # ip targets are pods: never the nodes' instances
    in_service = {i for i, s in classic_health(sandbox).items()
                  if s["State"] == "InService" and s["Description"] == "N/A"}
    assert in_service == workers


def test_exclude_label_drains_the_node_from_every_load_balancer_then_it_leaves(sandbox):
    instance_id, node = unused_node(sandbox)
    labelled = time.monotonic()
    sandbox.core.patch_node(node, {"metadata": {"labels": {EXCLUDE: "false"}}})  # any value excludes
    fast = wait_for(lambda: target_health(sandbox, "web-fast").get(instance_id, {}).get("State") == "draining"
                    and target_health(sandbox, "web-fast")[instance_id], timeout=5)
    assert fast["Reason"] == "Target.DeregistrationInProgress"
    assert target_health(sandbox, "web-slow")[instance_id]["State"] == "draining"
    assert classic_health(sandbox)[instance_id]["Description"] == "Instance deregistration currently in progress."
    wait_for(lambda: instance_id not in target_health(sandbox, "web-fast"), timeout=FAST + 2)
    assert target_health(sandbox, "web-slow")[instance_id]["State"] == "draining"  # the slower delay still runs
    wait_for(lambda: instance_id not in target_health(sandbox, "web-slow"), timeout=SLOW + 2)
    assert time.monotonic() - labelled >= SLOW * 0.95
    wait_for(lambda: instance_id not in classic_health(sandbox), timeout=CLASSIC_DRAINING + 2)

    # What the collection will do next: terminate the instance once it left every load balancer. No violation.
    client(sandbox, "autoscaling").terminate_instance_in_auto_scaling_group(
        InstanceId=instance_id, ShouldDecrementDesiredCapacity=False)
    wait_for(lambda: any(i["instance_id"] == instance_id and i["state"] != "running" for i in sandbox.aws.instances()))
    time.sleep(0.3)  # several controller passes: each checks the instances that left running
    report = sandbox.report()
    assert [v for v in report["load_balancer_violations"] if v["instance_id"] == instance_id] == []
    for name in ("web-fast", "web-slow", "legacy"):
        entry = next(e for e in report["load_balancers"][name]["history"] if e["instance"] == instance_id)
        assert entry["node"] == node
        assert entry["registered_at"] < entry["deregistering_at"] < entry["gone_at"]
    slow = next(e for e in report["load_balancers"]["web-slow"]["history"] if e["instance"] == instance_id)
    assert slow["gone_at"] - slow["deregistering_at"] == pytest.approx(SLOW, abs=0.2)


def test_cordon_alone_keeps_the_node_in_service(sandbox):
    instance_id, node = unused_node(sandbox)
    sandbox.core.patch_node(node, {"spec": {"unschedulable": True}})
    time.sleep(0.5)  # many controller passes
    assert target_health(sandbox, "web-fast")[instance_id]["State"] == "healthy"
    assert classic_health(sandbox)[instance_id]["State"] == "InService"


def test_cluster_autoscaler_taint_removes_the_node_from_target_groups_and_classic(sandbox):
    instance_id, node = unused_node(sandbox)
    sandbox.core.patch_node(node, {"spec": {"taints": [
        {"key": "ToBeDeletedByClusterAutoscaler", "value": "1700000000", "effect": "NoSchedule"}]}})
    wait_for(lambda: target_health(sandbox, "web-fast").get(instance_id, {}).get("State") == "draining", timeout=5)
    assert classic_health(sandbox)[instance_id]["Description"] == "Instance deregistration currently in progress."


def report_with_violations(sandbox, instance_id, count, at_least=False):
    """The sandbox's report once it records ``count`` load balancer violations (or at least that many) of
    ``instance_id``; else None."""
    report = sandbox.report()
    found = len([v for v in report["load_balancer_violations"] if v["instance_id"] == instance_id])
    return report if (found >= count if at_least else found == count) else None


def test_instance_terminated_while_registered_leaves_and_is_a_violation(sandbox):
    instance_id, node = unused_node(sandbox)
    client(sandbox, "autoscaling").terminate_instance_in_auto_scaling_group(
        InstanceId=instance_id, ShouldDecrementDesiredCapacity=False)
    report = wait_for(lambda: report_with_violations(sandbox, instance_id, 3), timeout=5)
    violations = {v["load_balancer"]: v for v in report["load_balancer_violations"] if v["instance_id"] == instance_id}
    assert set(violations) == {"web-fast", "web-slow", "legacy"}
    assert {v["state"] for v in violations.values()} == {"registered"}
    assert violations["web-fast"]["node"] == node
    # Its node goes NotReady, then away: the controllers deregister it, it drains and leaves.
    wait_for(lambda: instance_id not in target_health(sandbox, "web-slow"), timeout=SLOW + 3)
    wait_for(lambda: instance_id not in classic_health(sandbox), timeout=CLASSIC_DRAINING + 3)
    # The Auto Scaling group replaced it; the new node is registered once Ready.
    wait_for(lambda: len([h for h in target_health(sandbox, "web-fast").values() if h["State"] == "healthy"]) >= 3,
             timeout=10)


def test_instance_terminated_while_draining_is_a_violation(sandbox):
    instance_id, node = unused_node(sandbox)
    sandbox.core.patch_node(node, {"metadata": {"labels": {EXCLUDE: "true"}}})
    wait_for(lambda: target_health(sandbox, "web-slow").get(instance_id, {}).get("State") == "draining", timeout=5)
    client(sandbox, "autoscaling").terminate_instance_in_auto_scaling_group(
        InstanceId=instance_id, ShouldDecrementDesiredCapacity=True)
    report = wait_for(lambda: report_with_violations(sandbox, instance_id, 1, at_least=True), timeout=5)
    violations = [v for v in report["load_balancer_violations"] if v["instance_id"] == instance_id]
    assert {v["state"] for v in violations} == {"draining"}
    assert "web-slow" in {v["load_balancer"] for v in violations}
    assert all(v["draining_until"] > v["time"] for v in violations)
