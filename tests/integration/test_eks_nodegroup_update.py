# -*- coding: utf-8 -*-
# Copyright: Contributors to the eksops.nodegroup project
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""An EKS managed node group goes through EKS's own API (SPEC K1, K3, K5), on the sandbox playing EKS.

The collection never writes to the Auto Scaling group or launch template EKS owns: the modules that would are
refused before any change, and eks_nodegroup_update drives UpdateNodegroupConfig / UpdateNodegroupVersion and
follows DescribeUpdate. The molecule scenarios `managed` and `managed_custom` run the whole playbook.
"""

from __future__ import annotations

import json

import pytest

from nodegroup_state import call_counts, calls_between, mutating_calls
from sandbox_helpers import REPO_ROOT, run_module, run_playbook, running_sandbox

SCENARIO = "managed"
PLAYBOOK = REPO_ROOT / "playbooks" / "upgrade_nodegroup.yml"
GROUP = {"cluster_name": "managed", "nodegroup_name": "workers"}
TARGET_RELEASE = "1.30.0-20240615"


def eks_writes(calls: dict[str, int]) -> dict[str, int]:
    return {key: count for key, count in calls.items() if key.split(" ")[0].startswith("UpdateNodegroup")}


def test_nodegroup_info_reports_a_managed_group_and_eks_record(sandbox):
    result = run_module(sandbox, "nodegroup_info", GROUP)
    assert not result.get("failed"), result
    group = result["nodegroup"]
    assert group["kind"] == "managed"
    assert group["node_selector"] == "eks.amazonaws.com/nodegroup=workers"
    assert group["managed"]["release_version"] == "1.29.0-20240101"
    assert group["managed"]["health_issues"] == []
    assert group["plan"] is None
    assert group["asg_name"] == sandbox.report()["nodegroups"]["workers"]["asg"]["name"]


@pytest.mark.parametrize("module, args", [
    ("launch_template_version", {"kubernetes_version": "1.30"}),
    ("asg_surge", {"mode": "rolling"}),
    ("nodegroup_scale_restore", {}),
])
def test_modules_that_write_to_the_group_refuse_a_managed_one_before_any_change(sandbox, module, args):
    before = call_counts(sandbox)
    result = run_module(sandbox, module, dict(GROUP, **args))
    assert result.get("failed") and result["code"] == "InvalidParameter", result
    assert result["parameter"] == "nodegroup_name" and "EKS managed node group" in result["msg"]
    assert mutating_calls(calls_between(before, call_counts(sandbox))) == {}


def test_image_id_is_refused_saying_what_to_use_instead(sandbox):
    result = run_module(sandbox, "eks_nodegroup_update", dict(GROUP, image_id="ami-0123456789abcdef0"))
    assert result.get("failed") and result["parameter"] == "image_id", result
    # A group on EKS's own launch template runs EKS-optimized AMIs only: the release is what to give.
    assert "kubernetes_version or release_version" in result["msg"]


def test_check_mode_shows_the_plan_and_calls_no_update(sandbox):
    before = call_counts(sandbox)
    result = run_module(sandbox, "eks_nodegroup_update", dict(GROUP, kubernetes_version="1.30", max_unavailable=2),
                        check=True)
    assert not result.get("failed") and result["changed"], result
    assert result["nodegroup_update"]["plan"]["action"] == "start"
    assert result["nodegroup_update"]["plan"]["expected_release_version"] == TARGET_RELEASE
    assert result["nodegroup_update"]["plan"]["config_update"]["updateConfig"]["maxUnavailable"] == 2
    assert eks_writes(calls_between(before, call_counts(sandbox))) == {}


def test_the_update_runs_through_eks_and_a_rerun_changes_nothing(sandbox):
    before = call_counts(sandbox)
    result = run_module(sandbox, "eks_nodegroup_update", dict(GROUP, kubernetes_version="1.30", max_unavailable=2,
                                                              wait_timeout=300, poll_interval=1))
    assert not result.get("failed") and result["nodegroup_update"]["finished"] and result["changed"], result
    assert result["nodegroup_update"]["eks_update"]["status"] == "Successful"
    assert result["nodegroup_update"]["nodegroup"]["release_version"] == TARGET_RELEASE
    assert result["nodegroup_update"]["progress"] == {"nodes_total": 6, "nodes_updated": 6}
    calls = calls_between(before, call_counts(sandbox))
    assert eks_writes(calls) == {"UpdateNodegroupConfig OK": 1, "UpdateNodegroupVersion OK": 1}
    assert mutating_calls(calls) == {}, "the collection wrote to what EKS owns"
    report = sandbox.report()
    assert report["nodegroups"]["workers"]["eks"]["health"]["issues"] == []
    assert report["pods_lost"] == [] and report["pdb_violations"] == []

    before = call_counts(sandbox)
    again = run_module(sandbox, "eks_nodegroup_update", dict(GROUP, kubernetes_version="1.30", max_unavailable=2))
    assert not again.get("failed") and not again["changed"] and again["nodegroup_update"]["finished"], again
    assert again["nodegroup_update"]["plan"]["action"] == "none" and "already" in again["msg"]
    assert eks_writes(calls_between(before, call_counts(sandbox))) == {}


# --- The playbook on a managed group: check mode, and EKS's own failure ------------------------------------------

AMI_129, AMI_130 = "amazon-eks-node-1.29-v20240101", "amazon-eks-node-1.30-v20240615"
BLOCKED_SCENARIO = {
    "name": "blocked", "availability_zones": ["us-west-2a"],
    "amis": [{"name": AMI_129, "kubernetes_version": "1.29", "family": "amazon-linux-2", "recommended": True},
             {"name": AMI_130, "kubernetes_version": "1.30", "family": "amazon-linux-2", "recommended": True}],
    "nodegroups": [{"name": "workers", "kind": "managed", "ami": AMI_129, "min_size": 1, "max_size": 3,
                    "desired_capacity": 1}],
    # SPEC Z3: a PDB with minAvailable = replicas never allows an eviction; EKS's drain fails after its timeout.
    "workloads": [{"kind": "Deployment", "name": "billing", "replicas": 1, "pdb": {"min_available": 1}}],
}


@pytest.fixture(scope="module")
def blocked(tmp_path_factory):
    with running_sandbox(BLOCKED_SCENARIO, tmp_path_factory.mktemp("sandbox-blocked")) as handle:
        yield handle


def upgrade(sandbox, tmp_path, check=False, **extra):
    report = tmp_path / "report.json"
    result = run_playbook(sandbox, PLAYBOOK, dict(cluster_name="blocked", nodegroup_name="workers",
                                                  kubernetes_version="1.30", upgrade_report_path=str(report),
                                                  **extra), check=check)
    return result, json.loads(report.read_text()) if report.exists() else None


def test_check_mode_of_the_playbook_changes_nothing(blocked, tmp_path):
    """And says what it would do (issue 25 item 3: it said "No EKS update needed: the node group was already on the
    target" beside a diff of 1.29 -> 1.30)."""
    before = call_counts(blocked)
    result, report = upgrade(blocked, tmp_path, check=True)
    assert result.returncode == 0, result.stdout + result.stderr
    calls = calls_between(before, call_counts(blocked))
    assert eks_writes(calls) == {} and mutating_calls(calls) == {}
    assert report["eks_update"]["plan"]["action"] == "start"
    assert "No EKS update started (check mode); the run would start one: Node group" in result.stdout
    assert "No EKS update needed" not in result.stdout


def test_issue29_item3_drain_settings_eks_does_not_take_are_named_not_ignored_silently(blocked, tmp_path):
    result, dummy = upgrade(blocked, tmp_path, check=True, drain_timeout=120, post_drain_wait=60)
    assert result.returncode == 0, result.stdout + result.stderr
    assert "drain_timeout 120 s (EKS: 900 s) is ignored" in result.stdout
    assert "post_drain_wait" not in result.stdout.split("is ignored")[0].rsplit("\n", 1)[-1]


def test_issue29_item3_pod_eviction_failure_names_the_pods_and_budgets_that_blocked_it(blocked, tmp_path):
    """EKS's PodEvictionFailure names only the node (resourceIds); the collection names the pod still on it and the
    PodDisruptionBudget at 0 that holds it (SPEC K3, K4, U8). Runs before the rerun with force below."""
    result, report = upgrade(blocked, tmp_path)
    assert result.returncode != 0 and report["error"]["code"] == "PodEvictionFailure", report["error"]
    [eks_error] = report["eks_update"]["eks_update"]["errors"]
    [node] = eks_error["resource_ids"]
    [billing] = [pod.metadata.name for pod in blocked.core_v1().list_namespaced_pod("default").items
                 if pod.metadata.name.startswith("billing") and pod.spec.node_name == node]
    msg = report["error"]["msg"]
    # EKS's own words first, then what held the node: the pod, and the budget that allows no disruption.
    assert "Reached max retries while trying to evict pods from nodes in node group workers" in msg
    assert ("Still on the node(s) EKS named: node %s: 1 pod(s) could not be evicted: default/%s (PodDisruptionBudget "
            "billing allows no disruption; PodDisruptionBudget billing)" % (node, billing)) in msg, msg


def test_eks_failure_is_reported_with_its_code_and_a_rerun_with_force_finishes(blocked, tmp_path):
    result, report = upgrade(blocked, tmp_path)
    assert result.returncode != 0
    assert report["status"] == "failed" and report["kind"] == "managed", report
    assert report["error"]["code"] == "PodEvictionFailure"
    assert report["eks_update"]["eks_update"]["status"] == "Failed"
    # The advice never claims that nothing changed: EKS did change the group before its drain failed.
    assert "Nothing was changed" not in report["error"]["resume"] and "force=true" in report["error"]["resume"]

    result, report = upgrade(blocked, tmp_path, force=True)
    assert result.returncode == 0, result.stdout[-3000:]
    assert report["status"] == "succeeded" and report["eks_update"]["eks_update"]["status"] == "Successful"
    eks = blocked.report()["nodegroups"]["workers"]["eks"]
    assert eks["releaseVersion"] == "1.30.0-20240615" and eks["health"]["issues"] == []
