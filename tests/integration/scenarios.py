# -*- coding: utf-8 -*-
# Copyright: Contributors to the eksops.nodegroup project
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Sandbox scenarios several integration tests share, each test giving its own sizes, workloads and faults."""

from __future__ import annotations

from typing import Any

AMI_129 = "amazon-eks-node-al2023-x86_64-standard-1.29-v20240101"
AMI_130 = "amazon-eks-node-al2023-x86_64-standard-1.30-v20240615"


def two_az_workers(name: str, max_size: int, workloads: list[dict[str, Any]], **extra: Any) -> dict[str, Any]:
    """One self-managed group, workers, of 2 nodes over two AZs on 1.29, with 1.30's AMI recommended too."""
    return {
        "name": name,
        "availability_zones": ["us-west-2a", "us-west-2b"],
        "amis": [{"name": AMI_129, "kubernetes_version": "1.29", "recommended": True},
                 {"name": AMI_130, "kubernetes_version": "1.30", "recommended": True}],
        "nodegroups": [{"name": "workers", "kind": "self_managed", "ami": AMI_129, "min_size": 1,
                        "max_size": max_size, "desired_capacity": 2}],
        "workloads": workloads,
        **extra,
    }


def pinned_pools(name: str, workers_size: int, workloads: list[dict[str, Any]]) -> dict[str, Any]:
    """Two self-managed groups in one AZ, solo (one node) and workers, whose nodes carry the label pool=<group>."""
    def group(group_name: str, size: int) -> dict[str, Any]:
        return {"name": group_name, "ami": AMI_129, "min_size": size, "max_size": size, "desired_capacity": size,
                "labels": {"pool": group_name}}

    return {
        "name": name,
        "availability_zones": ["us-west-2a"],
        "amis": [{"name": AMI_129, "kubernetes_version": "1.29"}],
        # Self-managed groups (terraform): a workload is pinned by the label their user data gives the nodes.
        "nodegroups": [group("solo", 1), group("workers", workers_size)],
        "workloads": workloads,
    }
