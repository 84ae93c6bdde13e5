# -*- coding: utf-8 -*-
# Copyright: Contributors to the eksops.nodegroup project
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""The integration fixtures themselves: Ansible runs through run_module against the sandbox, and the sandbox
answers boto3 and kubernetes calls for the demo scenario."""

from __future__ import annotations

import re

from nodegroup_state import asg_name_of, instance_id_of, nodegroup_nodes
from sandbox_helpers import run_module

SCENARIO = "demo"


def test_run_module_returns_results_and_failures_without_raising(sandbox):
    assert run_module(sandbox, "ansible.builtin.ping", {"data": "sandbox"}) == {
        "ping": "sandbox", "changed": False, "failed": False, "invocation": {"module_args": {"data": "sandbox"}}}
    failed = run_module(sandbox, "ansible.builtin.fail", {"msg": "boom"})
    assert failed["failed"] is True and failed["msg"] == "boom"
    missing = run_module(sandbox, "no_such_module", {})
    assert missing["failed"] is True and "eksops.nodegroup.no_such_module" in missing["msg"]


def test_run_module_passes_check_and_diff_mode(sandbox):
    target = sandbox.state_dir / "check-diff.txt"
    planned = run_module(sandbox, "ansible.builtin.copy", {"content": "new\n", "dest": str(target)},
                         check=True, diff=True)
    assert planned["changed"] is True and not target.exists()          # -C reached the task
    assert planned["diff"][0]["after"] == "new\n"                      # -D too, and the diff is kept
    applied = run_module(sandbox, "ansible.builtin.copy", {"content": "new\n", "dest": str(target)})
    assert applied["changed"] is True and target.read_text() == "new\n"
    assert not applied.get("diff")                                     # no -D: no diff


def test_sandbox_answers_boto3_and_kubernetes(sandbox):
    cluster = sandbox.client("eks").describe_cluster(name="demo")["cluster"]
    assert cluster["endpoint"].startswith("https://127.0.0.1:")

    # demo's node group is self-managed the terraform-aws-eks way (SPEC K1): its ASG is named by terraform's
    # name_prefix, tagged Name and kubernetes.io/cluster/<cluster>, and no tag names it a node group.
    [workers] = sandbox.client("autoscaling").describe_auto_scaling_groups()["AutoScalingGroups"]
    assert re.fullmatch(r"workers-\d{26}", workers["AutoScalingGroupName"]), workers["AutoScalingGroupName"]
    tags = {t["Key"]: t["Value"] for t in workers["Tags"]}
    assert tags["Name"] == "workers" and tags["kubernetes.io/cluster/demo"] == "owned"
    assert not [key for key in tags if key.startswith(("eks:", "alpha.eksctl.io/"))]
    assert workers["DesiredCapacity"] == 6

    # Its nodes carry no node-group label (no eks.amazonaws.com/* either: the group is not EKS managed); each
    # is one of the group's instances by spec.providerID (SPEC K2).
    nodes = sandbox.core_v1().list_node().items
    assert len(nodes) == 6
    group_labels = ("eks.amazonaws.com/", "alpha.eksctl.io/")
    assert not [key for n in nodes for key in n.metadata.labels if key.startswith(group_labels)]
    instance_ids = {i["InstanceId"] for i in workers["Instances"]}
    assert {instance_id_of(n) for n in nodes} == instance_ids
    assert {n.metadata.name for n in nodegroup_nodes(sandbox)} == {n.metadata.name for n in nodes}
    assert sandbox.apps_v1().read_namespaced_deployment("web", "default").status.ready_replicas == 4
    pdbs = sandbox.policy_v1().list_namespaced_pod_disruption_budget("default").items
    assert [p.spec.min_available for p in pdbs if p.metadata.name == "web"] == [3]

    report = sandbox.report()
    group = report["nodegroups"]["workers"]
    assert group["node_count_min"] == 6
    # The report names the group's ASG and gives each node's group, AMI and version from its instance.
    assert group["asg"]["name"] == workers["AutoScalingGroupName"] == asg_name_of(sandbox)
    assert {n["instance_id"] for n in group["nodes"]} == instance_ids
    assert {n["lt_version"] for n in group["nodes"]} == {1}
    assert len({n["ami"] for n in group["nodes"]}) == 1
    assert report["workloads"]["default/web"]["min_ready"] == 4
    assert report["pdb_violations"] == [] and report["pods_lost"] == []
    assert any(key.startswith("DescribeAutoScalingGroups OK") for key in report["aws_calls"])
    assert any(" list nodes 200" in key for key in report["k8s_requests"])
