# -*- coding: utf-8 -*-
# Copyright: Contributors to the eksops.nodegroup project
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Clients: the one AWS client factory and the one Kubernetes client factory a run uses, from the shared options.

A module's EksopsModule holds one; so does the node_replace action plugin, which runs the upgrade phase's batch
loop on the controller (docs/architecture.md). Clients are built on first use and cached: one session, one
botocore client per service, one Kubernetes ApiClient proven to be the cluster's (SPEC K4).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

from ansible_collections.eksops.nodegroup.plugins.module_utils.aws.session import aws_client, aws_session
from ansible_collections.eksops.nodegroup.plugins.module_utils.kube.client import (
    auth_method,
    core_v1,
    describe_eks_cluster,
    k8s_api_client,
    translate_k8s_errors,
    version_api,
)
from ansible_collections.eksops.nodegroup.plugins.module_utils.host.clock import SYSTEM_CLOCK, Clock
from ansible_collections.eksops.nodegroup.plugins.module_utils.kube.watch import retry_api_call
from ansible_collections.eksops.nodegroup.plugins.module_utils.aws.resource_actions import ResourceActions

# The first request to the Kubernetes API retries for this long only: a cluster that cannot be reached (or that
# refuses the credentials) at the start fails in seconds, before anything changes. Later calls retry transient
# failures for longer (kube_watch.DEFAULT_RETRY_WINDOW_SECONDS): a drain outlives an API server blip.
FIRST_CONTACT_RETRY_SECONDS = 15

# prove_cluster(params, aws, core_v1, api_endpoint, eks_endpoint): raises when the API is not cluster_name's (K4).
ClusterProof = Callable[[Mapping[str, Any], Callable[[str], Any], Any, str, str], None]


class Clients:
    """Cached AWS clients and Kubernetes ApiClient for ``params`` (the shared AWS and Kubernetes options)."""

    def __init__(self, params: Mapping[str, Any], user_agent: str, clock: Clock | None = None,
                 aws_clients: Callable[[str], Any] | None = None, *, proof: ClusterProof) -> None:
        self.params = params
        # The K4 proof (nodegroup/cluster_proof.py's prove_cluster), given by whoever builds the clients: the factory
        # knows how to reach a cluster, not what a node group is.
        self._prove_cluster = proof
        self.user_agent = user_agent
        self._clock = clock  # the first contact's retries (host/clock.py's Clock; None: SYSTEM_CLOCK)
        self._aws_client_factory = aws_clients  # service -> client, instead of building them (tests)
        self._aws_session = None
        self._aws_clients = {}
        self.k8s_client = None
        self._core_v1 = None
        self.lease_heartbeats = {}  # (asg name, lease id) -> lease.Heartbeat, for a process that claims per step
        # EC2 descriptions by instance id, for instances.described_for_join: each instance described once.
        self.instance_descriptions = {}
        # debug_botocore_endpoint_logs (amazon.aws): the AWS calls of the process from here on, for resource_actions.
        self.resource_actions = ResourceActions() if params.get("debug_botocore_endpoint_logs") else None

    def stop_lease_heartbeats(self) -> None:
        """Stop the heartbeats of the leases claimed through these clients (an action plugin's, when it ends)."""
        for heartbeat in self.lease_heartbeats.values():
            heartbeat.stop()

    def aws(self, service: str) -> Any:
        """A cached botocore client for ``service``."""
        if self._aws_client_factory is not None:
            return self._aws_client_factory(service)
        if service not in self._aws_clients:
            if self._aws_session is None:
                self._aws_session = aws_session(self.params)
            self._aws_clients[service] = aws_client(self.params, service, session=self._aws_session)
        return self._aws_clients[service]

    def k8s(self) -> Any:
        """A cached kubernetes ApiClient (see kube/client.py, k8s_api_client, for how credentials are chosen).

        Built on first use and checked with one GET /version, so an unreachable API server or rejected
        credentials fail here, named, rather than after a long retry inside the work. With ``cluster_name``, the
        API is then proven to be that cluster's (SPEC K4) before it is used.
        """
        if self.k8s_client is None:
            params = self.params
            with translate_k8s_errors("connect to the Kubernetes API"):
                client = k8s_api_client(params, user_agent=self.user_agent)
                retry_api_call(version_api(client).get_code, clock=self._clock,
                               deadline=(self._clock or SYSTEM_CLOCK).now() + FIRST_CONTACT_RETRY_SECONDS)
            # Credentials built from cluster_name use DescribeCluster's endpoint: proven by construction.
            if params.get("cluster_name") and auth_method(params) != "cluster_name":
                eks_endpoint = describe_eks_cluster(self.aws("eks"), params["cluster_name"])[0]
                self._prove_cluster(params, self.aws, core_v1(client), client.configuration.host, eks_endpoint)
            self.k8s_client = client
        return self.k8s_client

    def with_resource_actions(self, result: dict[str, Any]) -> dict[str, Any]:
        """``result`` with ``resource_actions`` when debug_botocore_endpoint_logs asked for them (amazon.aws)."""
        if self.resource_actions is not None:
            result["resource_actions"] = self.resource_actions.listed()
        return result

    def core_v1(self) -> Any:
        if self._core_v1 is None:
            self._core_v1 = core_v1(self.k8s())
        return self._core_v1
