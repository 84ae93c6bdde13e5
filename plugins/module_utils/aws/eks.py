# -*- coding: utf-8 -*-
# Copyright: Contributors to the eksops.nodegroup project
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Amazon EKS API calls (the client is ``aws_client(params, "eks")``).

Each function is one call, its errors translated by aws_call; what to make of an answer is the caller's.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from ansible_collections.eksops.nodegroup.plugins.module_utils.aws.session import aws_call
from ansible_collections.eksops.nodegroup.plugins.module_utils.aws.shapes import paginate


@aws_call("describe EKS cluster {cluster_name}")
def describe_cluster(eks: Any, cluster_name: str) -> dict[str, Any]:
    return eks.describe_cluster(name=cluster_name)["cluster"]


@aws_call("describe EKS node group {nodegroup_name}")
def describe_nodegroup(eks: Any, cluster_name: str, nodegroup_name: str) -> dict[str, Any]:
    return eks.describe_nodegroup(clusterName=cluster_name, nodegroupName=nodegroup_name)["nodegroup"]


@aws_call("describe update {update_id} of node group {nodegroup_name}")
def describe_update(eks: Any, cluster_name: str, nodegroup_name: str, update_id: str) -> dict[str, Any]:
    return eks.describe_update(name=cluster_name, nodegroupName=nodegroup_name, updateId=update_id)["update"]


@aws_call("list the updates of node group {nodegroup_name}")
def list_updates(eks: Any, cluster_name: str, nodegroup_name: str) -> list[str]:
    """The ids of the node group's updates (all pages)."""
    return paginate(eks, "list_updates", "updateIds", name=cluster_name, nodegroupName=nodegroup_name)


@aws_call(lambda eks, request: "update the updateConfig of node group %s" % request["nodegroupName"], stops_with_job=True)
def update_nodegroup_config(eks: Any, request: Mapping[str, Any]) -> dict[str, Any]:
    """UpdateNodegroupConfig with ``request`` (clusterName, nodegroupName, ...); returns the update started."""
    return eks.update_nodegroup_config(**request)["update"]


@aws_call(lambda eks, request: "update the version of node group %s" % request["nodegroupName"], stops_with_job=True)
def update_nodegroup_version(eks: Any, request: Mapping[str, Any]) -> dict[str, Any]:
    """UpdateNodegroupVersion with ``request`` (clusterName, nodegroupName, ...); returns the update started."""
    return eks.update_nodegroup_version(**request)["update"]


@aws_call("list the EKS clusters")
def list_clusters(eks: Any) -> list[str]:
    """The names of the region's clusters (all pages of 100, the most ListClusters returns)."""
    return paginate(eks, "list_clusters", "clusters", PaginationConfig=dict(PageSize=100))


@aws_call("list the managed node groups of cluster {cluster_name}")
def list_nodegroups(eks: Any, cluster_name: str) -> list[str]:
    """The names of the cluster's EKS managed node groups (all pages of 100, the most ListNodegroups returns)."""
    return paginate(eks, "list_nodegroups", "nodegroups", clusterName=cluster_name,
                    PaginationConfig=dict(PageSize=100))
