# -*- coding: utf-8 -*-
# Copyright: Contributors to the eksops.nodegroup project
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Issue 29 item 3: EKS's PodEvictionFailure names only the node(s); the pods still on them and the
PodDisruptionBudgets that hold them are named from the cluster, as the self-managed drain names them (SPEC K3, U8)."""

from __future__ import annotations

from ansible_collections.eksops.nodegroup.plugins.module_utils.errors import UpgradeError
from ansible_collections.eksops.nodegroup.plugins.module_utils._drain.blockers import (
    blockers_text,
    blocking_entries,
    eviction_failure_nodes,
    with_blockers,
)

from ..fakes import FakeCluster, make_pod, node

NODE = "ip-10-0-1-2.us-west-2.compute.internal"


def pdb(name, allowed, labels, namespace="default"):
    return {"metadata": {"name": name, "namespace": namespace},
            "spec": {"selector": {"matchLabels": labels}},
            "status": {"disruptionsAllowed": allowed}}


def failed_update(*errors):
    return {"id": "u-1", "type": "VersionUpdate", "status": "Failed", "errors": list(errors)}


EVICTION_ERROR = {"errorCode": "PodEvictionFailure", "resourceIds": [NODE],
                  "errorMessage": "Reached max retries while trying to evict pods from nodes in node group workers"}


def test_issue29_item3_pod_eviction_failure_names_the_pods_and_budgets_that_blocked_it():
    pods = [make_pod("billing-1", node=NODE, labels={"app": "billing"}),
            make_pod("web-1", node=NODE, labels={"app": "web"}),
            make_pod("aws-node-1", node=NODE, owner="DaemonSet"),
            make_pod("kube-proxy", node=NODE, owner=None, mirror=True),
            make_pod("job-1", node=NODE, phase="Succeeded")]
    entries = blocking_entries(pods, {"default": [pdb("billing", 0, {"app": "billing"}),
                                                  pdb("web", 1, {"app": "web"})]})
    assert entries == [
        dict(pod="default/billing-1", reason="PodDisruptionBudget billing allows no disruption", pdb="billing"),
        dict(pod="default/web-1", reason="still on the node, no PodDisruptionBudget at 0 holds it now", pdb="web"),
    ]
    assert blockers_text({NODE: entries}).startswith(
        "node %s: 2 pod(s) could not be evicted: default/billing-1 (PodDisruptionBudget billing allows no "
        "disruption; PodDisruptionBudget billing), default/web-1 (" % NODE)


def test_a_pod_two_budgets_select_is_named_with_both():
    """'multiple PDBs pointing to the same Pod' (EKS user guide): the Eviction API refuses such a pod."""
    pods = [make_pod("api-1", node=NODE, labels={"app": "api", "tier": "front"})]
    entries = blocking_entries(pods, {"default": [pdb("api", 1, {"app": "api"}), pdb("front", 1, {"tier": "front"})]})
    assert entries == [dict(pod="default/api-1", pdb="api,front",
                            reason="2 PodDisruptionBudgets select it, and the Eviction API refuses such a pod")]


def test_budgets_of_another_namespace_and_terminating_pods():
    pods = [make_pod("db-0", node=NODE, namespace="data", labels={"app": "db"}, deleting_for=5)]
    entries = blocking_entries(pods, {"default": [pdb("db", 0, {"app": "db"})], "data": []})
    assert entries == [dict(pod="data/db-0", reason="still terminating", pdb=None)]
    assert blockers_text({NODE: []}) == "node %s: no pod that a drain moves is on it now" % NODE


def test_only_pod_eviction_failures_name_nodes():
    creation = {"errorCode": "NodeCreationFailure", "resourceIds": ["i-0abc"], "errorMessage": "not joining"}
    assert eviction_failure_nodes(failed_update(creation)) == []
    assert eviction_failure_nodes(failed_update(EVICTION_ERROR, dict(EVICTION_ERROR))) == [NODE]
    err = UpgradeError("NodeCreationFailure", "EKS update u-1 failed")
    assert with_blockers(err, failed_update(creation), lambda: None) is err


def test_the_pods_are_read_from_the_cluster_and_added_to_eks_error():
    cluster = FakeCluster(nodes=[node(NODE)], pods=[make_pod("billing-1", node=NODE, labels={"app": "billing"}),
                                                    make_pod("elsewhere", node="node-b", labels={"app": "billing"})],
                          pdbs=[pdb("billing", 0, {"app": "billing"})])
    err = UpgradeError("PodEvictionFailure", "EKS update u-1 failed", update_id="u-1")
    named = with_blockers(err, failed_update(EVICTION_ERROR), lambda: cluster)
    assert named.code == "PodEvictionFailure" and named.details["update_id"] == "u-1"
    assert named.msg.startswith("EKS update u-1 failed. Still on the node(s) EKS named: node %s: 1 pod(s)" % NODE)
    assert [entry["pod"] for entry in named.details["blocking_pods"][NODE]] == ["default/billing-1"]
    # Reads only: the pods on the node and the budgets of their namespace.
    assert cluster.verbs("list", "pods") and cluster.verbs("list", "pdbs") and not cluster.verbs("evict")


def test_eks_error_is_kept_when_the_cluster_cannot_be_read():
    def unreachable():
        raise UpgradeError("ClusterUnreachable", "The Kubernetes API at https://x is not EKS cluster demo's")

    err = UpgradeError("PodEvictionFailure", "EKS update u-1 failed")
    named = with_blockers(err, failed_update(EVICTION_ERROR), unreachable)
    assert named.code == "PodEvictionFailure" and "blocking_pods" not in named.details
    assert "could not be read to name those that blocked the drain: ClusterUnreachable" in named.msg
