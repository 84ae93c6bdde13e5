# -*- coding: utf-8 -*-
# Copyright: Contributors to the eksops.nodegroup project
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Issue 29 item 3: the report of a managed upgrade counts the evictions EKS made (it said pods_evicted 0 and
disruptions_per_old_pod null), from what the cluster shows: kube-apiserver marks each pod it evicts DisruptionTarget /
EvictionByEvictionAPI. The test counts them itself with the kubernetes client while the playbook runs."""

from __future__ import annotations

import json
import threading

from nodegroup_state import count_evictions
from sandbox_helpers import REPO_ROOT, module_sandbox, run_playbook

AMI_129, AMI_130 = "amazon-eks-node-1.29-v20240101", "amazon-eks-node-1.30-v20240615"
SCENARIO = {
    "name": "evictcount", "availability_zones": ["us-west-2a", "us-west-2b"],
    "amis": [{"name": AMI_129, "kubernetes_version": "1.29", "family": "amazon-linux-2", "recommended": True},
             {"name": AMI_130, "kubernetes_version": "1.30", "family": "amazon-linux-2", "recommended": True}],
    "nodegroups": [{"name": "workers", "kind": "managed", "ami": AMI_129, "min_size": 2, "max_size": 4,
                    "desired_capacity": 2}],
    "workloads": [{"kind": "Deployment", "name": "web", "replicas": 4}],
}


evictcount = module_sandbox(SCENARIO)


def test_issue29_item3_the_report_of_a_managed_upgrade_counts_the_evictions_eks_made(evictcount, tmp_path):
    old_nodes = sorted(node.metadata.name for node in evictcount.core_v1().list_node().items)
    stop = threading.Event()
    seen, watcher = count_evictions(evictcount, stop)
    report_path = tmp_path / "report.json"
    result = run_playbook(evictcount, REPO_ROOT / "playbooks" / "upgrade_nodegroup.yml",
                          dict(cluster_name="evictcount", nodegroup_name="workers", kubernetes_version="1.30",
                               upgrade_report_path=str(report_path)))
    stop.set()
    watcher.join(10)
    assert result.returncode == 0, result.stdout[-3000:]
    report = json.loads(report_path.read_text())
    assert report["status"] == "succeeded" and report["kind"] == "managed"
    assert report["eks_update"]["evictions"]["nodes_replaced"] == old_nodes
    # Every web pod was on an old node; EKS evicted each at least once, more when it drained a surge node too.
    assert report["pods_on_old_nodes"] == 4
    assert report["pods_evicted"] == len(seen) >= 4, (report["pods_evicted"], seen)
    assert report["disruptions_per_old_pod"] == round(len(seen) / 4, 2)
    assert evictcount.report()["pods_lost"] == []
