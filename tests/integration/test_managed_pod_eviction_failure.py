"""Issue 29 item 3: EKS's PodEvictionFailure on a managed node group names only the node; the collection names the
pods still on it and the PodDisruptionBudgets that hold them (SPEC K3, K4, U8), on the sandbox playing EKS's drain
(tests/sandbox/eks_sandbox/eks/update.py: resourceIds are the node names, as aws/containers-roadmap#1282 quotes)."""

from __future__ import annotations

import json

import pytest

from sandbox_helpers import REPO_ROOT, run_playbook, running_sandbox

AMI_129, AMI_130 = "amazon-eks-node-1.29-v20240101", "amazon-eks-node-1.30-v20240615"
SCENARIO = {
    "name": "evictfail", "availability_zones": ["us-west-2a"],
    "amis": [{"name": AMI_129, "kubernetes_version": "1.29", "family": "amazon-linux-2", "recommended": True},
             {"name": AMI_130, "kubernetes_version": "1.30", "family": "amazon-linux-2", "recommended": True}],
    "nodegroups": [{"name": "workers", "kind": "managed", "ami": AMI_129, "min_size": 1, "max_size": 3,
                    "desired_capacity": 1}],
    # minAvailable = replicas: the budget allows no disruption, and EKS's drain fails after its timeout.
    "workloads": [{"kind": "Deployment", "name": "billing", "replicas": 1, "pdb": {"min_available": 1}},
                  {"kind": "Deployment", "name": "web", "replicas": 1}],
}


@pytest.fixture(scope="module")
def evictfail(tmp_path_factory):
    with running_sandbox(SCENARIO, tmp_path_factory.mktemp("sandbox-evictfail")) as handle:
        yield handle


def test_issue29_item3_pod_eviction_failure_names_the_pods_and_budgets_that_blocked_it(evictfail, tmp_path):
    report_path = tmp_path / "report.json"
    result = run_playbook(evictfail, REPO_ROOT / "playbooks" / "upgrade_nodegroup.yml",
                          dict(cluster_name="evictfail", nodegroup_name="workers", kubernetes_version="1.30",
                               force=False, upgrade_report_path=str(report_path)))
    assert result.returncode != 0
    report = json.loads(report_path.read_text())
    assert report["error"]["code"] == "PodEvictionFailure", report["error"]
    [eks_error] = report["eks_update"]["eks_update"]["errors"]
    [node] = eks_error["resource_ids"]
    billing = [pod.metadata.name for pod in evictfail.core_v1().list_namespaced_pod("default").items
               if pod.metadata.name.startswith("billing") and pod.spec.node_name == node]
    assert len(billing) == 1, billing
    msg = report["error"]["msg"]
    # EKS's own words first, then what held the node: the pod, and the budget that allows no disruption.
    assert "Reached max retries while trying to evict pods from nodes in node group workers" in msg
    assert ("node %s: 1 pod(s) could not be evicted: default/%s (PodDisruptionBudget billing allows no disruption; "
            "PodDisruptionBudget billing)" % (node, billing[0])) in msg, msg
    assert "web-" not in msg.split("Still on the node(s) EKS named")[1], "the web pod left the node; it blocked nothing"
