# -*- coding: utf-8 -*-
# Copyright: Contributors to the eksops.nodegroup project
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""SPEC K4: before a module changes anything, the Kubernetes API it talks to is shown to be ``cluster_name``'s.

An ambient ~/.kube/config, a stale KUBECONFIG or a wrong context would otherwise let an upgrade drain the nodes
of one cluster and terminate the instances of another (its pods are lost). Two ways to prove it:

- the API endpoint in use is the one EKS's DescribeCluster returns for ``cluster_name`` (always so when the
  module built its credentials from ``cluster_name`` itself);
- otherwise (a proxy, a private DNS name in a kubeconfig), the node group's instances are there: at least one
  InService instance has a node with its spec.providerID, and every InService instance launched longer ago than
  the node-ready timeout has one (a younger one may still be joining).
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping
from typing import TYPE_CHECKING, Any

from ansible_collections.eksops.nodegroup.plugins.module_utils.host.clock import parse_utc_iso, utc_now
from ansible_collections.eksops.nodegroup.plugins.module_utils.members.group_nodes import list_all_nodes
from ansible_collections.eksops.nodegroup.plugins.module_utils.errors import CLUSTER_UNREACHABLE, UpgradeError
from ansible_collections.eksops.nodegroup.plugins.module_utils.members.instances import describe_instances, join_instances_nodes
from ansible_collections.eksops.nodegroup.plugins.module_utils.nodegroup.discovery import find_nodegroup

if TYPE_CHECKING:
    import datetime

try:
    from urllib.parse import urlsplit
except ImportError:  # pragma: no cover - Python 2 is not supported by the modules' dependencies anyway
    from urlparse import urlsplit

# How long an instance may take to register its node before its absence counts against the cluster (and before
# an instance without a node counts as one that never joined): the playbooks' node_ready_timeout default.
NODE_READY_TIMEOUT_DEFAULT = 900
_DEFAULT_PORTS = {"https": 443, "http": 80}


def endpoint_key(url: str | None) -> tuple[str, str, int | None, str]:
    """(scheme, host, port, path) of an API endpoint, so that spellings of one endpoint compare equal."""
    parts = urlsplit((url or "").strip())
    scheme = (parts.scheme or "https").lower()
    port = parts.port or _DEFAULT_PORTS.get(scheme)
    return scheme, (parts.hostname or "").lower(), port, parts.path.rstrip("/")


def same_endpoint(first: str | None, second: str | None) -> bool:
    return endpoint_key(first) == endpoint_key(second)


def node_evidence(instances: Iterable[Mapping[str, Any]], now: datetime.datetime, node_ready_timeout: float) -> dict[str, Any]:
    """What the group's instances say about the cluster in use: {proven, with_node, missing}.

    ``instances``: instances.join_instances_nodes records (node_name set when a node has the instance's
    providerID). ``missing`` lists the InService instances older than ``node_ready_timeout`` without a node.
    """
    in_service = [i for i in instances if i.get("lifecycle_state") == "InService"]
    with_node = [i["instance_id"] for i in in_service if i.get("node_name")]
    missing = []
    for instance in in_service:
        launched = parse_utc_iso(instance.get("launch_time"))
        if not instance.get("node_name") and launched is not None \
                and (now - launched).total_seconds() >= node_ready_timeout:
            missing.append(instance["instance_id"])
    return dict(proven=bool(with_node) and not missing, with_node=sorted(with_node), missing=sorted(missing),
                in_service=len(in_service))


def nodeless_instances(instance_ids: Iterable[str], ec2_instances: Mapping[str, Mapping[str, Any]], now: datetime.datetime,
                       node_ready_timeout: float) -> list[dict[str, Any]]:
    """Why each instance without a node has none, for the report (SPEC K2, K4): with the cluster proven, an
    instance without a node never joined it - it is still booting (launched less than ``node_ready_timeout``
    ago) or it failed the node-ready wait. ``ec2_instances``: {instance_id: EC2 description}."""
    found = []
    for instance_id in instance_ids:
        launched = (ec2_instances.get(instance_id) or {}).get("LaunchTime")
        age = int((now - launched).total_seconds()) if launched is not None else None
        if age is None:
            reason = "has no node, and EC2 does not say when it was launched"
        elif age < node_ready_timeout:
            reason = "was launched %d s ago and has not joined the cluster yet (node_ready_timeout %d s)" \
                % (age, node_ready_timeout)
        else:
            reason = "never joined the cluster: it has no node %d s after its launch (node_ready_timeout %d s)" \
                % (age, node_ready_timeout)
        found.append(dict(instance_id=instance_id, launched_seconds_ago=age, reason=reason))
    return found


def wrong_cluster_error(cluster_name: str, api_endpoint: str, eks_endpoint: str, evidence: Mapping[str, Any] | None = None,
                        asg_name: str | None = None) -> UpgradeError:
    """ClusterUnreachable naming both endpoints (SPEC K4, U8)."""
    if evidence is None:
        why = "and no node group was given to look for its instances there"
    elif not evidence["with_node"]:
        why = "and none of the %d InService instances of Auto Scaling group %s has a node there (by spec.providerID)" \
            % (evidence["in_service"], asg_name)
    else:
        why = "and instances %s of Auto Scaling group %s have no node there although they were launched longer " \
            "ago than the node-ready timeout" % (", ".join(evidence["missing"]), asg_name)
    return UpgradeError(
        CLUSTER_UNREACHABLE,
        "The Kubernetes API at %s is not EKS cluster %s's: DescribeCluster gives %s, %s. Check KUBECONFIG, the "
        "kubeconfig/context/host options (K8S_AUTH_*) and ~/.kube/config; this module changed nothing."
        % (api_endpoint, cluster_name, eks_endpoint, why),
        parameter="cluster_name", api_endpoint=api_endpoint, eks_endpoint=eks_endpoint,
        instances_with_node=(evidence or {}).get("with_node"), instances_without_node=(evidence or {}).get("missing"))


def prove_cluster(params: Mapping[str, Any], aws: Callable[[str], Any], core_v1: Any, api_endpoint: str, eks_endpoint: str) -> None:
    """Raise ClusterUnreachable unless the API at ``api_endpoint`` is cluster ``params["cluster_name"]``'s.

    ``aws(service)`` gives clients; the node evidence is looked for only when the endpoints differ and the module
    names a node group.
    """
    if same_endpoint(api_endpoint, eks_endpoint):
        return
    cluster_name = params["cluster_name"]
    if not params.get("nodegroup_name"):
        raise wrong_cluster_error(cluster_name, api_endpoint, eks_endpoint)
    group = find_nodegroup(aws("autoscaling"), aws("eks"), cluster_name, params["nodegroup_name"],
                           params.get("asg_name"))
    asg_instances = group.asg.get("Instances", [])
    ec2_instances = describe_instances(aws("ec2"), [i["InstanceId"] for i in asg_instances])
    instances = join_instances_nodes(asg_instances, ec2_instances, list_all_nodes(core_v1))
    timeout = params.get("node_ready_timeout")
    evidence = node_evidence(instances, utc_now(), NODE_READY_TIMEOUT_DEFAULT if timeout is None else timeout)
    if not evidence["proven"]:
        raise wrong_cluster_error(cluster_name, api_endpoint, eks_endpoint, evidence, group.asg_name)
