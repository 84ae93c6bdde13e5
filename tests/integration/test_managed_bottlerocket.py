"""Issue 29 item 3: on a Bottlerocket managed node group, `kubernetes_version` equal to the group's version moves it to
the newest release, read from SSM's .../latest/image_version (eksctl's managed upgrade reads the same parameter),
instead of a silent "nothing to do"; once there, a rerun has nothing to do (SPEC K3, K5)."""

from __future__ import annotations

from sandbox_helpers import module_sandbox, run_module

BR_OLD = "bottlerocket-aws-k8s-1.30-x86_64-v1.20.3-5d9ac849"
BR_NEW = "bottlerocket-aws-k8s-1.30-x86_64-v1.26.2-360b7a38"
SCENARIO = {
    "name": "brmanaged", "availability_zones": ["us-west-2a"], "cluster": {"kubernetes_version": "1.30"},
    "amis": [{"name": BR_OLD, "kubernetes_version": "1.30", "family": "bottlerocket/x86_64", "recommended": False},
             {"name": BR_NEW, "kubernetes_version": "1.30", "family": "bottlerocket/x86_64", "recommended": True}],
    "nodegroups": [{"name": "workers", "kind": "managed", "ami": BR_OLD, "min_size": 1, "max_size": 3,
                    "desired_capacity": 2}],
    "workloads": [{"kind": "Deployment", "name": "web", "replicas": 2}],
}
GROUP = {"cluster_name": "brmanaged", "nodegroup_name": "workers"}


brmanaged = module_sandbox(SCENARIO)


def test_issue29_item3_bottlerocket_kubernetes_version_of_the_group_moves_to_the_newest_release(brmanaged):
    args = dict(GROUP, kubernetes_version="1.30", wait_timeout=300, poll_interval=0.5)
    result = run_module(brmanaged, "eks_nodegroup_update", args)
    assert not result.get("failed") and result["changed"], result
    update = result["nodegroup_update"]
    assert update["plan"]["action"] == "start" and update["plan"]["expected_release_version"] == "1.26.2-360b7a38"
    assert update["eks_update"]["status"] == "Successful"
    assert (update["nodegroup"]["version"], update["nodegroup"]["release_version"]) == ("1.30", "1.26.2-360b7a38")
    assert brmanaged.report()["pods_lost"] == []

    again = run_module(brmanaged, "eks_nodegroup_update", args)
    assert not again.get("failed") and not again["changed"], again
    assert again["nodegroup_update"]["plan"]["action"] == "none" and "already on the target" in again["msg"]
