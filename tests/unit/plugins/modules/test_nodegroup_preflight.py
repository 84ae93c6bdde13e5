# -*- coding: utf-8 -*-
# Copyright: Contributors to the eksops.nodegroup project
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""nodegroup_preflight: its findings (SPEC Z1, Z2, Z3, D8) from raw objects, and run() on moto and a fake
API server (K1, K2, P2)."""

from __future__ import annotations

from unittest import mock

import pytest
from moto import mock_aws

from ansible_collections.eksops.nodegroup.plugins.module_utils.host.module import EksopsModule
from ansible_collections.eksops.nodegroup.plugins.modules import nodegroup_preflight
from ansible_collections.eksops.nodegroup.plugins.module_utils.steps import nodegroup_preflight as preflight_step
from ansible_collections.eksops.nodegroup.plugins.module_utils.steps.nodegroup_preflight import node_findings, preflight_findings

from ..fakes import FakeStore
from ..moto_nodegroup import CLUSTER, NODEGROUP, MotoNodegroup, node_labels, raw_node, run_module_in_process


def deployment(name, replicas, namespace="default", tolerations=None):
    return {"metadata": {"name": name, "namespace": namespace},
            "spec": {"replicas": replicas, "selector": {"matchLabels": {"app": name}},
                     "template": {"metadata": {"labels": {"app": name}},
                                  "spec": {"tolerations": tolerations or []}}}}


def pdb(name, app, namespace="default", **spec):
    return {"metadata": {"name": name, "namespace": namespace},
            "spec": dict(spec, selector={"matchLabels": {"app": app}})}


def pod(name, app=None, namespace="default", owned=True, grace=30, prestop=None, mirror=False):
    metadata = {"name": name, "namespace": namespace, "labels": {"app": app} if app else {}}
    if owned:
        metadata["ownerReferences"] = [{"kind": "ReplicaSet", "name": "rs", "controller": True}]
    if mirror:
        metadata["annotations"] = {"kubernetes.io/config.mirror": "abc"}
    container = {"name": "main"}
    if prestop is not None:
        container["lifecycle"] = {"preStop": {"exec": {"command": ["/bin/sh", "-c", prestop]}}}
    return {"metadata": metadata, "spec": {"terminationGracePeriodSeconds": grace, "containers": [container]}}


def checks(findings):
    return sorted((f["check"], f["namespace"], f["name"]) for f in findings)


def test_single_replica_and_blocking_pdb_are_reported_Z1_Z3():
    findings = preflight_findings([pod("billing-1", "billing", "payments")],
                                  [deployment("billing", 1, "payments")],
                                  [pdb("billing", "billing", "payments", minAvailable=1)])
    assert checks(findings) == [("blocking_pdb", "payments", "billing"), ("single_replica", "payments", "billing")]


def test_replicated_deployment_with_a_loose_pdb_is_fine_Z1():
    findings = preflight_findings([pod("web-1", "web")], [deployment("web", 4)], [pdb("web", "web", minAvailable=3)])
    assert findings == []


def test_deployment_without_pdb_is_reported_Z1():
    findings = preflight_findings([pod("cache-1", "cache")], [deployment("cache", 2)], [])
    assert checks(findings) == [("no_pdb", "default", "cache")]


def test_min_available_equal_to_replicas_or_max_unavailable_zero_blocks_Z3():
    pods = [pod("a-1", "a"), pod("b-1", "b"), pod("c-1", "c")]
    deployments = [deployment("a", 3), deployment("b", 3), deployment("c", 3)]
    budgets = [pdb("a", "a", minAvailable=3), pdb("b", "b", maxUnavailable=0), pdb("c", "c", minAvailable="100%")]
    assert checks(preflight_findings(pods, deployments, budgets)) == [
        ("blocking_pdb", "default", "a"), ("blocking_pdb", "default", "b"), ("blocking_pdb", "default", "c")]


def test_several_pdbs_on_one_deployment_are_reported_Z3():
    findings = preflight_findings([pod("web-1", "web")], [deployment("web", 4)],
                                  [pdb("web", "web", minAvailable=1), pdb("web-2", "web", maxUnavailable=1)])
    assert checks(findings) == [("multiple_pdbs", "default", "web")]


def test_tolerate_all_deployment_is_reported_Z3():
    findings = preflight_findings([pod("agent-1", "agent")],
                                  [deployment("agent", 2, tolerations=[{"operator": "Exists"}])],
                                  [pdb("agent", "agent", maxUnavailable=1)])
    assert checks(findings) == [("tolerates_all", "default", "agent")]


def test_issue25_item4_the_tolerate_all_warning_does_not_promise_a_failed_drain():
    """Issue 25 item 4: the replacement pods land back on the cordoned node only if the scheduler puts them there
    (seen succeeding without force): the preflight says both outcomes, not a sure PodEvictionFailure (issue 10
    item 7 asked that the failure be said, SPEC Z3)."""
    [finding] = preflight_findings([pod("agent-1", "agent")],
                                   [deployment("agent", 2, tolerations=[{"operator": "Exists"}])],
                                   [pdb("agent", "agent", maxUnavailable=1)])
    message = finding["message"]
    assert "scheduler" in message and "PodEvictionFailure unless force" in message
    assert "the drain succeeds" in message and "SPEC" not in message


def test_prestop_sleep_not_shorter_than_grace_is_reported_Z2():
    findings = preflight_findings([pod("web-1", "web", grace=10, prestop="sleep 10"),
                                   pod("web-2", "web", grace=30, prestop="sleep 10")],
                                  [deployment("web", 2)], [pdb("web", "web", maxUnavailable=1)])
    assert checks(findings) == [("prestop_exceeds_grace", "default", "web-1")]


def test_pod_without_controller_is_reported_but_mirror_pods_are_not_D8():
    findings = preflight_findings([pod("debug", owned=False), pod("kube-proxy", owned=False, mirror=True)], [], [])
    assert checks(findings) == [("unmanaged_pod", "default", "debug")]


def test_deployments_without_pods_on_the_node_group_are_ignored():
    findings = preflight_findings([pod("web-1", "web")], [deployment("web", 2), deployment("other", 1)],
                                  [pdb("web", "web", maxUnavailable=1)])
    assert findings == []


def test_issue27_item6_pods_and_nodes_that_ask_not_to_be_disrupted_are_named():
    """A pod annotated karpenter.sh/do-not-disrupt=true or cluster-autoscaler.kubernetes.io/safe-to-evict=false is
    named with what the drain does with it; one its drain leaves on the node (a mirror pod) is not; a node annotated
    karpenter.sh/do-not-disrupt=true is named too. Warnings: force lets the upgrade go on."""
    karpenter, autoscaler, mirror = pod("batch-1"), pod("db-0"), pod("kube-proxy", owned=False, mirror=True)
    karpenter["metadata"]["annotations"] = {"karpenter.sh/do-not-disrupt": "true"}
    autoscaler["metadata"]["annotations"] = {"cluster-autoscaler.kubernetes.io/safe-to-evict": "false"}
    mirror["metadata"]["annotations"]["karpenter.sh/do-not-disrupt"] = "true"
    findings = preflight_findings([karpenter, autoscaler, mirror, pod("web-1")], [], [])
    assert [(f["check"], f["name"], f["blocking"]) for f in findings] == [
        ("do_not_disrupt", "batch-1", False), ("do_not_disrupt", "db-0", False)]
    assert findings[1]["message"] == ("Pod default/db-0 is annotated cluster-autoscaler.kubernetes.io/safe-to-evict="
                                      "false: its node's drain refuses to evict it (PodEvictionFailure naming it) "
                                      "unless force, which evicts it.")
    node = tainted("n1")
    node["metadata"]["annotations"] = {"karpenter.sh/do-not-disrupt": "true"}
    assert [(f["check"], f["kind"], f["name"]) for f in node_findings([node, tainted("n2")])] == [
        ("do_not_disrupt", "Node", "n1")]


def test_issue27_item5_each_finding_names_the_nodes_it_concerns():
    """Issue 27 item 5: the dry run's quarantine preview tells which old nodes a budget that never allows an
    eviction, or a pod refused before any eviction, would hold: a pod's finding names its node, a Deployment's and
    its budget's the nodes its pods run on, a node's the node."""
    pods = [pod("billing-1", "billing"), pod("billing-2", "billing"), pod("debug", owned=False)]
    for one, node_name in zip(pods, ["n1", "n2", "n3"]):
        one["spec"]["nodeName"] = node_name
    findings = preflight_findings(pods, [deployment("billing", 2)], [pdb("billing", "billing", minAvailable=2)])
    assert [(f["check"], f["name"], f["nodes"]) for f in findings] == [
        ("unmanaged_pod", "debug", ["n3"]), ("blocking_pdb", "billing", ["n1", "n2"])]
    node = tainted("n4")
    node["metadata"]["annotations"] = {"karpenter.sh/do-not-disrupt": "true"}
    assert [f["nodes"] for f in node_findings([node])] == [["n4"]]


def tainted(name, *keys):
    return {"metadata": {"name": name}, "spec": {"taints": [{"key": k, "effect": "NoSchedule"} for k in keys]}}


def test_a_node_the_autoscaler_is_deleting_blocks_the_upgrade_C1():
    """Issue 10 item 5: found before any change, not after the surge; the soft taint only warns."""
    findings = node_findings([tainted("n1", "ToBeDeletedByClusterAutoscaler"),
                              tainted("n2", "DeletionCandidateOfClusterAutoscaler"), tainted("n3", "other")])
    assert [(f["check"], f["name"], f["blocking"]) for f in findings] == [
        ("autoscaler_deleting", "n1", True), ("autoscaler_candidate", "n2", False)]
    assert "ToBeDeletedByClusterAutoscaler" in findings[0]["message"]


# --- run(): the node group's nodes are its instances' nodes, whatever its kind (SPEC K1, K2) -----------------

def node_pod(name, node_name, app):
    return dict(pod(name, app), spec=dict(pod(name, app)["spec"], nodeName=node_name))


@pytest.mark.parametrize("kind, convention", [("self_managed", "terraform"), ("self_managed_eksctl", None),
                                              ("managed", None)])
def test_run_examines_the_pods_of_the_groups_nodes_only(capsys, kind, convention):
    """A plain self-managed group labels no node: its nodes are found by spec.providerID among all, and only
    their pods are examined, each node's with a spec.nodeName field selector (P2). pods_to_move counts, by node,
    what a drain would move: not the DaemonSet pod nor the finished pod (issue 11 item 1's denominator)."""
    with mock_aws():
        world = MotoNodegroup(desired=2, kind=kind, convention=convention or "terraform")
        group_nodes = world.raw_nodes()
        other = raw_node("ip-10-9-0-1", "i-0000000000000b01", "us-west-2a",
                         node_labels(kind, "us-west-2a", "ip-10-9-0-1", nodegroup="batch"))
        nodes = FakeStore(group_nodes + [other])
        first, second = (n["metadata"]["name"] for n in group_nodes)
        daemon = node_pod("agent-1", first, "agent")
        daemon["metadata"]["ownerReferences"] = [{"kind": "DaemonSet", "name": "agent", "controller": True}]
        finished = dict(node_pod("job-1", second, "web"), status={"phase": "Succeeded"})
        pods = FakeStore([node_pod("billing-1", first, "billing"), daemon,
                          node_pod("web-1", second, "web"), node_pod("web-2", second, "web"), finished,
                          node_pod("batch-1", "ip-10-9-0-1", "batch")])
        deployments = FakeStore([deployment("billing", 1), deployment("web", 3), deployment("batch", 1)])
        budgets = FakeStore([pdb("web", "web", maxUnavailable=1)])
        core_v1 = mock.Mock(list_node=nodes.list_func, list_pod_for_all_namespaces=pods.list_func)
        with mock.patch.object(EksopsModule, "core_v1", lambda self: core_v1), \
                mock.patch.object(EksopsModule, "k8s", lambda self: None), \
                mock.patch.object(preflight_step, "apps_v1", lambda client: mock.Mock(
                    list_deployment_for_all_namespaces=deployments.list_func)), \
                mock.patch.object(preflight_step, "policy_v1", lambda client: mock.Mock(
                    list_pod_disruption_budget_for_all_namespaces=budgets.list_func)):
            result = run_module_in_process(nodegroup_preflight.main, dict(cluster_name=CLUSTER,
                                                                          nodegroup_name=NODEGROUP), capsys)
    assert not result.get("failed"), result
    assert result["preflight"]["pods_examined"] == 5
    assert result["preflight"]["pods_to_move"] == {first: 1, second: 2}
    # batch (one replica too) runs on another group's node: not this upgrade's concern
    assert checks(result["preflight"]["warnings_found"]) == [("single_replica", "default", "billing")]
    assert result["preflight"]["blocking"] == []
    assert sorted(kwargs["field_selector"] for dummy, kwargs in pods.calls) == sorted(
        "spec.nodeName=" + n["metadata"]["name"] for n in group_nodes)


def run_on_empty_nodes(world, capsys, aws_calls=None, **args):
    """run() on the world's nodes without pods or workloads: only the load balancer check can find anything."""
    core_v1 = mock.Mock(list_node=FakeStore(world.raw_nodes()).list_func,
                        list_pod_for_all_namespaces=FakeStore([]).list_func)
    with mock.patch.object(EksopsModule, "core_v1", lambda self: core_v1), \
            mock.patch.object(EksopsModule, "k8s", lambda self: None), \
            mock.patch.object(preflight_step, "apps_v1", lambda client: mock.Mock(
                list_deployment_for_all_namespaces=FakeStore([]).list_func)), \
            mock.patch.object(preflight_step, "policy_v1", lambda client: mock.Mock(
                list_pod_disruption_budget_for_all_namespaces=FakeStore([]).list_func)):
        return run_module_in_process(nodegroup_preflight.main, dict(cluster_name=CLUSTER, nodegroup_name=NODEGROUP,
                                                                    **args), capsys, aws_calls=aws_calls)


def target_group(world, name, delay, instance_ids, cluster=CLUSTER):
    vpc = world.ec2.describe_vpcs()["Vpcs"][0]["VpcId"]
    arn = world.elbv2.create_target_group(Name=name, Protocol="TCP", Port=30080, VpcId=vpc, TargetType="instance",
                                          Tags=[{"Key": "elbv2.k8s.aws/cluster", "Value": cluster}]
                                          )["TargetGroups"][0]["TargetGroupArn"]
    world.elbv2.modify_target_group_attributes(TargetGroupArn=arn, Attributes=[
        {"Key": "deregistration_delay.timeout_seconds", "Value": str(delay)}])
    world.elbv2.register_targets(TargetGroupArn=arn, Targets=[{"Id": i, "Port": 30080} for i in instance_ids])


def test_B3_a_load_balancer_draining_longer_than_post_drain_wait_is_reported(capsys):
    with mock_aws():
        world = MotoNodegroup(desired=2)
        members = [i["InstanceId"] for i in world.asg()["Instances"]]
        target_group(world, "k8s-default-web", 300, members)
        target_group(world, "k8s-default-fast", 10, members)
        target_group(world, "k8s-other-cluster", 900, members, cluster="staging")
        calls = []
        without = run_on_empty_nodes(world, capsys, aws_calls=calls)
        with_wait = run_on_empty_nodes(world, capsys, post_drain_wait=60)
        going_on = run_on_empty_nodes(world, capsys, post_drain_wait=60, ignore_load_balancer_timeout=True)
        attached = world.elbv2.describe_target_groups(Names=["k8s-default-web"])["TargetGroups"][0]["TargetGroupArn"]
        world.autoscaling.attach_load_balancer_target_groups(AutoScalingGroupName=world.asg()["AutoScalingGroupName"],
                                                             TargetGroupARNs=[attached])
        left_to_auto_scaling = run_on_empty_nodes(world, capsys, post_drain_wait=60)
    # without post_drain_wait, no load balancer is asked about
    assert without["preflight"]["warnings_found"] == [] and "DescribeAutoScalingGroups" in calls
    assert not [call for call in calls if call.startswith(("DescribeTarget", "DescribeLoadBalancer"))], calls
    [finding] = with_wait["preflight"]["warnings_found"]
    # blocking: a node it still holds would fail half-way; raising the bound costs nothing
    assert (finding["check"], finding["name"], finding["blocking"]) == ("load_balancer_delay", "k8s-default-web", True)
    assert with_wait["preflight"]["blocking"] == [finding]
    assert "for 300 s, longer than post_drain_wait (60 s)" in finding["message"]
    assert "Raise post_drain_wait to at least 300 s" in finding["message"]
    [warning] = going_on["preflight"]["warnings_found"]
    assert not warning["blocking"] and "terminated anyway (ignore_load_balancer_timeout)" in warning["message"]
    # a target group attached to the Auto Scaling group is Auto Scaling's to drain at the termination
    assert left_to_auto_scaling["preflight"]["warnings_found"] == []


def test_B3_a_target_group_whose_targets_may_not_be_read_is_a_warning_not_a_failed_preflight(capsys):
    """Partial IAM: DescribeTargetHealth denied. The preflight says which load balancer and what the drain will do."""
    from ansible_collections.eksops.nodegroup.plugins.module_utils.aws import elbv2
    from ansible_collections.eksops.nodegroup.plugins.module_utils.errors import ACCESS_DENIED, UpgradeError

    def denied(client, arn):
        raise UpgradeError(ACCESS_DENIED, "not authorized to perform elasticloadbalancing:DescribeTargetHealth")

    with mock_aws():
        world = MotoNodegroup(desired=1)
        target_group(world, "k8s-default-web", 300, [i["InstanceId"] for i in world.asg()["Instances"]])
        with mock.patch.object(elbv2, "describe_target_health", denied):
            result = run_on_empty_nodes(world, capsys, post_drain_wait=60)
    assert result["preflight"]["warnings_found"] == [] and not result.get("failed")
    assert any("who k8s-default-web hold could not be read" in str(w) and "waits the whole post_drain_wait (60 s)" in str(w)
               for w in result["warnings"]), result["warnings"]


def test_documentation_matches_the_argument_spec():
    from ansible_collections.eksops.nodegroup.plugins.module_utils.host.module import merged_argument_spec

    from ..module_docs import assert_docs_match_spec

    assert_docs_match_spec(nodegroup_preflight, merged_argument_spec(nodegroup_preflight.ARGUMENT_SPEC, uses_aws=True,
                                                                     uses_k8s=True))
