# -*- coding: utf-8 -*-
# Copyright: Contributors to the eksops.nodegroup project
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Issue 27 item 5 on the sandbox, through the playbooks: undrainable_nodes quarantine.

A single replica whose PodDisruptionBudget (minAvailable 1) never allows its eviction holds one node: the rolling
upgrade quarantines that node (cordoned, labelled, its instance kept), replaces the others, drains it once more at
the end and fails with NodesQuarantined naming the node, the pod and the budget; once the budget is freed as a
person would (a second replica), a rerun retries the node and finishes, nothing lost, no budget broken. Then a surge
upgrade meets two such nodes with max_quarantined_nodes 1 and stops at once, both nodes cordoned and labelled, no
instance terminated undrained, the group's size matching its desired capacity (SPEC U5, U8, S3). On an EKS managed
node group, which EKS drains itself, the run says that quarantine does not apply (K3)."""

from __future__ import annotations

import json

from nodegroup_state import call_counts, changes_by_the_collection, workers_asg
from sandbox_helpers import REPO_ROOT, module_sandbox, run_playbook, wait_for
from upgrade_runs import JOURNAL_PREFIX, other_ami

LABEL = "eksops.nodegroup/quarantined"
AZS = ["us-west-2a", "us-west-2b", "us-west-2c"]
AMI_129 = "amazon-eks-node-al2023-x86_64-standard-1.29-v20240101"
AMI_130 = "amazon-eks-node-al2023-x86_64-standard-1.30-v20240615"
SCENARIO = {
    "name": "quarantine",
    "availability_zones": AZS,
    "amis": [{"name": AMI_129, "kubernetes_version": "1.29", "recommended": True},
             {"name": AMI_130, "kubernetes_version": "1.30", "recommended": True}],
    "nodegroups": [{"name": "workers", "kind": "self_managed", "ami": AMI_129, "min_size": 1, "max_size": 9,
                    "desired_capacity": 3}],
    "workloads": [{"kind": "Deployment", "name": "web", "replicas": 3, "pdb": {"max_unavailable": 1}},
                  {"kind": "Deployment", "name": "billing", "replicas": 1, "pdb": {"min_available": 1}},
                  {"kind": "DaemonSet", "name": "node-agent", "namespace": "kube-system"}],
}
DRAIN = {"drain_timeout": 5, "post_drain_wait": 1, "undrainable_nodes": "quarantine"}

quarantine_sandbox = module_sandbox(SCENARIO)
managed_sandbox = module_sandbox(dict(SCENARIO, name="managed_quarantine", nodegroups=[
    dict(SCENARIO["nodegroups"][0], kind="managed")]))


def upgrade(sandbox, report_path, playbook="upgrade_nodegroup.yml", **extra):
    result = run_playbook(sandbox, REPO_ROOT / "playbooks" / playbook, dict(
        DRAIN, cluster_name="quarantine", nodegroup_name="workers", upgrade_report_path=str(report_path), **extra))
    return result, json.loads(report_path.read_text())


def pods_of(sandbox, prefix):
    return [p for p in sandbox.core_v1().list_namespaced_pod("default").items
            if p.metadata.name.startswith(prefix) and p.metadata.deletion_timestamp is None]


def quarantined_nodes(sandbox):
    return sorted(n.metadata.name for n in sandbox.core_v1().list_node(label_selector=LABEL + "=true").items)


def test_issue27_item5_a_dry_run_previews_the_node_its_budget_would_hold_in_quarantine(quarantine_sandbox, tmp_path):
    """Check mode shows the real plan (issue 10 item 9): with undrainable_nodes quarantine, the dry run names the
    node billing's budget would hold until drain_timeout, quarantined instead of failing the run, within
    max_quarantined_nodes; nothing changed. The next test's run quarantines that node."""
    sandbox = quarantine_sandbox
    held_node = pods_of(sandbox, "billing-")[0].spec.node_name
    before = call_counts(sandbox)
    result = run_playbook(sandbox, REPO_ROOT / "playbooks" / "upgrade_nodegroup.yml", dict(
        DRAIN, cluster_name="quarantine", nodegroup_name="workers", kubernetes_version="1.30",
        max_quarantined_nodes=1, upgrade_report_path=str(tmp_path / "dry.json")), check=True)
    assert result.returncode == 0, result.stdout[-3000:]
    assert changes_by_the_collection(before, call_counts(sandbox)) == {}
    preview = json.loads((tmp_path / "dry.json").read_text())["plan"]["quarantine"]
    assert [(h["node"], h["by"]) for h in preview["held"]] == [(held_node, ["PodDisruptionBudget default/billing"])]
    assert (preview["carried"], preview["exceeded_batch"], preview["failed_batch"]) == ([], None, None)
    shown = " ".join(result.stdout.split())
    assert "each drain would run out of drain_timeout (5 s) and its node be quarantined" in shown, shown[-3000:]
    assert "at most 1 node(s) held at once, within max_quarantined_nodes 1" in shown


def test_issue27_item5_a_node_held_by_its_budget_is_quarantined_the_others_replaced_and_a_rerun_finishes(
        quarantine_sandbox, tmp_path):
    sandbox = quarantine_sandbox
    held_node = pods_of(sandbox, "billing-")[0].spec.node_name
    result, report = upgrade(sandbox, tmp_path / "first.json", kubernetes_version="1.30", max_quarantined_nodes=1)
    assert result.returncode != 0, result.stdout[-3000:]
    error = report["error"]
    assert (error["code"], error["phase"]) == ("NodesQuarantined", "upgrade"), error
    assert held_node in error["msg"] and "PodDisruptionBudget default/billing" in error["msg"], error["msg"]
    assert [entry["node"] for entry in report["quarantined"]] == [held_node]
    entry = report["quarantined"][0]
    assert entry["retried"] is True and entry["pod_disruption_budgets"] == ["default/billing"]
    assert [pod["pod"].split("-")[0] for pod in entry["pods"]] == ["default/billing"]
    assert len(report["replaced_instances"]) == 2 and entry["instance_id"] not in report["replaced_instances"]

    state = sandbox.report()
    nodes = state["nodegroups"]["workers"]["nodes"]
    held = [n for n in nodes if n["name"] == held_node]
    assert held and held[0]["unschedulable"], nodes
    assert quarantined_nodes(sandbox) == [held_node]
    assert "default/billing" in sandbox.core_v1().read_node(held_node).metadata.annotations[
        "eksops.nodegroup/quarantine-reason"]
    assert entry["instance_id"] in [i["InstanceId"] for i in workers_asg(sandbox)["Instances"]]
    assert len([n for n in nodes if n["ami"] == held[0]["ami"]]) == 1
    assert state["pods_lost"] == [] and state["pdb_violations"] == []

    # A dry run now leaves the quarantined node out of the batches: the rerun retries it last.
    result = run_playbook(sandbox, REPO_ROOT / "playbooks" / "upgrade_nodegroup.yml", dict(
        DRAIN, cluster_name="quarantine", nodegroup_name="workers", kubernetes_version="1.30",
        max_quarantined_nodes=1, upgrade_report_path=str(tmp_path / "dry.json")), check=True)
    assert result.returncode == 0, result.stdout[-3000:]
    plan = json.loads((tmp_path / "dry.json").read_text())["plan"]
    assert (plan["batches"], plan["quarantine"]["carried"]) == ([], [dict(instance_id=entry["instance_id"],
                                                                          node=held_node)])

    # Freed as a person would: a second replica, so that the budget allows one eviction.
    sandbox.apps_v1().patch_namespaced_deployment("billing", "default", {"spec": {"replicas": 2}})
    wait_for(lambda: len([p for p in pods_of(sandbox, "billing-")
                          if any(c.type == "Ready" and c.status == "True" for c in p.status.conditions or [])]) == 2,
             120, "billing's second replica Ready")
    result, report = upgrade(sandbox, tmp_path / "rerun.json", kubernetes_version="1.30", max_quarantined_nodes=1)
    assert result.returncode == 0, result.stdout[-3000:]
    assert report["status"] == "succeeded" and report["quarantined"] == []
    assert report["replaced_instances"] == [entry["instance_id"]]
    state = sandbox.report()
    asg = workers_asg(sandbox)
    assert (asg["MinSize"], asg["MaxSize"], asg["DesiredCapacity"]) == (1, 9, 3)
    assert [t["Key"] for t in asg.get("Tags", []) if t["Key"].startswith(JOURNAL_PREFIX)] == []
    nodes = state["nodegroups"]["workers"]["nodes"]
    assert len(nodes) == 3 and not [n for n in nodes if n["unschedulable"] or n["name"] == held_node]
    assert quarantined_nodes(sandbox) == []
    assert state["pods_lost"] == [] and state["pdb_violations"] == []


def test_issue27_item5_one_more_than_max_quarantined_nodes_stops_a_surge_upgrade_at_once(quarantine_sandbox, tmp_path):
    sandbox = quarantine_sandbox
    current, target = other_ami(sandbox)
    del current
    # Two pods of web on two nodes, each alone under a budget that allows no eviction (kubectl delete pdb web,
    # kubectl label, kubectl create pdb --min-available 1), as two single replicas would be. Web's own budget goes
    # first: a pod under two budgets is refused at once (the eviction subresource's 500), not held until the
    # drain times out, and that fails the run instead of quarantining (docs/roles.md).
    sandbox.policy_v1().delete_namespaced_pod_disruption_budget("web", "default")
    by_node = {}
    for pod in pods_of(sandbox, "web-"):
        by_node.setdefault(pod.spec.node_name, pod)
    held_nodes = sorted(by_node)[:2]
    assert len(held_nodes) == 2, by_node
    for n, node_name in enumerate(held_nodes):
        pod = by_node[node_name]
        sandbox.core_v1().patch_namespaced_pod(pod.metadata.name, "default", {"metadata": {"labels": {"hold": str(n)}}})
        sandbox.policy_v1().create_namespaced_pod_disruption_budget("default", {
            "apiVersion": "policy/v1", "kind": "PodDisruptionBudget", "metadata": {"name": "hold-%d" % n},
            "spec": {"minAvailable": 1, "selector": {"matchLabels": {"hold": str(n)}}}})
    result, report = upgrade(sandbox, tmp_path / "surge.json", playbook="surge_upgrade.yml", image_id=target,
                             allow_downgrade=True, max_surge=1, max_unavailable=0, max_quarantined_nodes=1)
    assert result.returncode != 0, result.stdout[-3000:]
    error = report["error"]
    assert error["code"] == "NodesQuarantined", error["msg"]
    assert "more than max_quarantined_nodes 1" in error["msg"] and "stopped before its next batch" in error["msg"], \
        error["msg"]
    assert sorted(entry["node"] for entry in report["quarantined"]) == held_nodes
    assert quarantined_nodes(sandbox) == held_nodes
    state = sandbox.report()
    nodes = dict((n["name"], n) for n in state["nodegroups"]["workers"]["nodes"])
    assert all(nodes[name]["unschedulable"] for name in held_nodes)
    asg = workers_asg(sandbox)
    live = [i for i in asg["Instances"] if i["LifecycleState"] in ("InService", "Pending")]
    assert set(e["instance_id"] for e in report["quarantined"]) <= set(i["InstanceId"] for i in live)
    # Each step kept the node it launched: the group holds what its desired capacity says, none scaled in undrained.
    assert asg["DesiredCapacity"] == len(live)
    assert state["pods_lost"] == []


def test_issue27_item5_on_a_managed_group_the_run_says_quarantine_is_not_eks(managed_sandbox, tmp_path):
    report_path = tmp_path / "managed.json"
    result = run_playbook(managed_sandbox, REPO_ROOT / "playbooks" / "upgrade_nodegroup.yml", dict(
        cluster_name="managed_quarantine", nodegroup_name="workers", kubernetes_version="1.30",
        undrainable_nodes="quarantine", drain_timeout=900, post_drain_wait=60, upgrade_report_path=str(report_path)),
        check=True)
    assert result.returncode == 0, result.stdout[-3000:]
    assert ("undrainable_nodes quarantine (EKS: its update fails with PodEvictionFailure) is ignored: node group "
            "workers is an EKS managed node group") in " ".join(result.stdout.split())
