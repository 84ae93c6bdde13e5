"""An EKS managed node group goes through EKS's own API (SPEC K1, K3, K5), on the sandbox playing EKS.

The collection never writes to the Auto Scaling group or launch template EKS owns: the modules that would are
refused before any change, and eks_nodegroup_update drives UpdateNodegroupConfig / UpdateNodegroupVersion and
follows DescribeUpdate. The molecule scenarios `managed` and `managed_custom` run the whole playbook.
"""

from __future__ import annotations

import pytest

from nodegroup_state import call_counts, calls_between, mutating_calls
from sandbox_helpers import run_module

SCENARIO = "managed"
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
    assert result["plan"]["action"] == "start"
    assert result["plan"]["expected_release_version"] == TARGET_RELEASE
    assert result["plan"]["config_update"]["updateConfig"]["maxUnavailable"] == 2
    assert eks_writes(calls_between(before, call_counts(sandbox))) == {}


def test_the_update_runs_through_eks_and_a_rerun_changes_nothing(sandbox):
    before = call_counts(sandbox)
    result = run_module(sandbox, "eks_nodegroup_update", dict(GROUP, kubernetes_version="1.30", max_unavailable=2,
                                                              wait_timeout=300, poll_interval=1))
    assert not result.get("failed") and result["finished"] and result["changed"], result
    assert result["eks_update"]["status"] == "Successful"
    assert result["nodegroup"]["release_version"] == TARGET_RELEASE
    assert result["progress"] == {"nodes_total": 6, "nodes_updated": 6}
    calls = calls_between(before, call_counts(sandbox))
    assert eks_writes(calls) == {"UpdateNodegroupConfig OK": 1, "UpdateNodegroupVersion OK": 1}
    assert mutating_calls(calls) == {}, "the collection wrote to what EKS owns"
    report = sandbox.report()
    assert report["nodegroups"]["workers"]["eks"]["health"]["issues"] == []
    assert report["pods_lost"] == [] and report["pdb_violations"] == []

    before = call_counts(sandbox)
    again = run_module(sandbox, "eks_nodegroup_update", dict(GROUP, kubernetes_version="1.30", max_unavailable=2))
    assert not again.get("failed") and not again["changed"] and again["finished"], again
    assert again["plan"]["action"] == "none" and "already" in again["msg"]
    assert eks_writes(calls_between(before, call_counts(sandbox))) == {}
