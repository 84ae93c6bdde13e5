# -*- coding: utf-8 -*-
# Copyright: Contributors to the eksops.nodegroup project
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Issue 29 item 3: on a Bottlerocket or Windows managed node group, `kubernetes_version` equal to the group's version
moves it to the newest release instead of a silent "nothing to do"; once there, a rerun has nothing to do (SPEC K3,
K5). Bottlerocket's release is SSM's .../latest/image_version (eksctl's managed upgrade reads the same parameter);
Windows's is the end of the name of the AMI that SSM's ami-windows-latest/.../image_id names."""

from __future__ import annotations

import pytest

from sandbox_helpers import module_sandbox, run_module

BR_OLD = "bottlerocket-aws-k8s-1.30-x86_64-v1.20.3-5d9ac849"
BR_NEW = "bottlerocket-aws-k8s-1.30-x86_64-v1.26.2-360b7a38"
WIN_OLD = "Windows_Server-2022-English-Core-EKS_Optimized-1.30-2024.05.14"
WIN_NEW = "Windows_Server-2022-English-Core-EKS_Optimized-1.30-2024.06.13"


def scenario(name, family, old, new):
    return {
        "name": name, "availability_zones": ["us-west-2a"], "cluster": {"kubernetes_version": "1.30"},
        "amis": [{"name": old, "kubernetes_version": "1.30", "family": family, "recommended": False},
                 {"name": new, "kubernetes_version": "1.30", "family": family, "recommended": True}],
        "nodegroups": [{"name": "workers", "kind": "managed", "ami": old, "min_size": 1, "max_size": 3,
                        "desired_capacity": 2}],
        "workloads": [{"kind": "Deployment", "name": "web", "replicas": 2}],
    }


brmanaged = module_sandbox(scenario("brmanaged", "bottlerocket/x86_64", BR_OLD, BR_NEW))
winmanaged = module_sandbox(scenario("winmanaged", "windows/core-2022", WIN_OLD, WIN_NEW))


@pytest.mark.parametrize("sandbox_name, release", [("brmanaged", "1.26.2-360b7a38"),
                                                   ("winmanaged", "1.30-2024.06.13")])
def test_issue29_item3_bottlerocket_and_windows_kubernetes_version_of_the_group_moves_to_the_newest_release(
        request, sandbox_name, release):
    sandbox = request.getfixturevalue(sandbox_name)
    args = dict(cluster_name=sandbox_name, nodegroup_name="workers", kubernetes_version="1.30", wait_timeout=300,
                poll_interval=0.5)
    result = run_module(sandbox, "eks_nodegroup_update", args)
    assert not result.get("failed") and result["changed"], result
    update = result["nodegroup_update"]
    assert update["plan"]["action"] == "start" and update["plan"]["expected_release_version"] == release
    assert update["eks_update"]["status"] == "Successful"
    assert (update["nodegroup"]["version"], update["nodegroup"]["release_version"]) == ("1.30", release)
    assert sandbox.report()["pods_lost"] == []

    again = run_module(sandbox, "eks_nodegroup_update", args)
    assert not again.get("failed") and not again["changed"], again
    assert again["nodegroup_update"]["plan"]["action"] == "none" and "already on the target" in again["msg"]
