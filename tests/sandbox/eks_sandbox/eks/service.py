# -*- coding: utf-8 -*-
# Copyright: Contributors to the eksops.nodegroup project
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""EksNodegroups: the sandbox playing EKS for managed node groups (CreateNodegroup at seeding, the node-group API,
health reconciliation and the update workflow, advanced by AwsSim's tick).

Threading: every entry point runs under the AWS lock (AwsSim's, taken here too; it is re-entrant). The update
workflow calls the Kubernetes store after it, the order kube/controllers.py documents (the cloud's lock before
the store's, never the other way round).
"""

from __future__ import annotations

import base64
import random
import threading
import time
from typing import Any

from moto.autoscaling.models import AutoScalingBackend, FakeAutoScalingGroup
from moto.ec2.exceptions import InvalidLaunchTemplateVersionNotFound
from moto.ec2.models import EC2Backend
from moto.eks.models import EKSBackend

from ..kube.api import Api
from .creation import ClusterInfo, create_managed_nodegroup, update_group
from .health import health_issues
from .operations import EksError
from .records import IN_PROGRESS, SUCCESSFUL, ManagedNodegroup, Update
from .update import Target, UpdateDeps, VersionUpdate
from .wire import answer

__all__ = ["EksNodegroups"]


class EksNodegroups:
    """EKS's side of the scenario's managed node groups. AwsSim calls create_nodegroup (seeding), answer (the
    request middleware) and tick; the runtime calls attach_kube once the Kubernetes side exists, and view for the
    report."""

    def __init__(self, scenario: dict[str, Any], lock: threading.RLock, recorder: Any, ec2: EC2Backend,
                 autoscaling: AutoScalingBackend, eks: EKSBackend):
        self.scenario = scenario
        self.lock = lock
        self.recorder = recorder
        self.ec2 = ec2
        self.autoscaling = autoscaling
        self.eks = eks
        self.amis: list[dict[str, Any]] = scenario["amis"]
        self.records: dict[str, ManagedNodegroup] = {}
        self._cluster: ClusterInfo | None = None
        self._api: Api | None = None  # the cluster's API (attach_kube): updates wait for it
        self._version_updates: dict[str, VersionUpdate] = {}
        self._rng = random.Random(scenario["seed"])  # "It randomly selects a node": reproducibly

    @property
    def region(self) -> str:
        return self.eks.region_name

    @property
    def cluster_name(self) -> str:
        return self.scenario["cluster"]["name"]

    # ------------------------------------------------------------------------------------------ entry points

    def create_nodegroup(self, nodegroup: dict[str, Any], subnets: dict[str, str], kube_url: str,
                         kube_ca_pem: str | None) -> FakeAutoScalingGroup:
        """CreateNodegroup for a scenario node group of kind managed; returns its Auto Scaling group."""
        with self.lock:
            name = self.scenario["cluster"]["name"]
            self._cluster = ClusterInfo(name, kube_url, base64.b64encode(kube_ca_pem.encode()).decode()
                                        if kube_ca_pem else None, self.eks.account_id, self.eks.region_name)
            ami = next(a for a in self.amis if a["name"] == nodegroup["ami"])
            record, group = create_managed_nodegroup(self.ec2, self.autoscaling, self._cluster, nodegroup, ami,
                                                     subnets)
            self.records[record.name] = record
            return group

    def attach_kube(self, api: Api) -> None:
        """The cluster's API, which the update workflow drains nodes through (until then updates wait)."""
        with self.lock:
            self._api = api
            for running in self._version_updates.values():
                running.deps.api = api

    def answer(self, operation: str | None, environ: dict[str, Any], body: bytes
               ) -> tuple[int, list[tuple[str, str]], bytes] | None:
        """The HTTP answer to a node-group operation, or None for a request moto serves."""
        with self.lock:
            return answer(self, operation, environ, body)

    def tick(self) -> None:
        """Advance running updates, then reconcile each node group's health and status."""
        with self.lock:
            now = time.monotonic()
            for name, record in self.records.items():
                running = self._version_updates.get(name)
                if running is not None and running.deps.api is not None:
                    running.step(now)
                    if running.done:
                        del self._version_updates[name]
                        record.modified_at = time.time()
                for update in record.updates:
                    if update.type == "ConfigUpdate" and update.status == IN_PROGRESS:
                        update.status = SUCCESSFUL  # applied at the request; reported done at the next pass
                record.health_issues = health_issues(record, self.autoscaling.autoscaling_groups.get(record.asg_name))
                record.settle_status()

    def view(self, name: str) -> dict[str, Any] | None:
        """The report's nodegroups.<name>.eks: EKS's view of a managed node group (None for any other)."""
        with self.lock:
            record = self.records.get(name)
            if record is None:
                return None
            return {"status": record.status, "version": record.version, "releaseVersion": record.release_version,
                    "launchTemplateVersion": record.template_version,
                    "health": {"issues": [dict(i) for i in record.health_issues]},
                    "updates": [u.to_api() for u in record.updates]}

    # ------------------------------------------------------------------------------------------ for operations

    def check_cluster(self, name: str) -> str:
        """The cluster's Kubernetes version; ResourceNotFoundException for an unknown cluster."""
        cluster = self.eks.clusters.get(name)
        if cluster is None:
            raise EksError("ResourceNotFoundException", f"No cluster found for name: {name}.", clusterName=name)
        return cluster.version

    def nodegroup(self, cluster: str, name: str) -> ManagedNodegroup:
        """A managed node group; a self-managed one is unknown to EKS, as on AWS."""
        self.check_cluster(cluster)
        record = self.records.get(name)
        if record is None or record.cluster != cluster:
            raise EksError("ResourceNotFoundException", f"No node group found for name: {name}.",
                           clusterName=cluster, nodegroupName=name)
        return record

    def desired_size(self, record: ManagedNodegroup) -> int:
        group = self.autoscaling.autoscaling_groups.get(record.asg_name)
        return group.desired_capacity if group is not None else record.spec["desired_capacity"]

    def nodegroup_api_view(self, record: ManagedNodegroup) -> dict[str, Any]:
        return record.to_api(self.desired_size(record))

    def launch_template_image(self, template_id: str, number: int) -> str | None:
        """The ImageId of a version of a launch template (None when it names none)."""
        with self.lock:
            return self.ec2.get_launch_template(template_id).get_version(number).data.get("ImageId")

    def launch_template_version_number(self, template_id: str, version: str) -> int | None:
        try:
            return self.ec2.get_launch_template(template_id).get_version(version).number
        except InvalidLaunchTemplateVersionNotFound:
            return None

    def resize(self, record: ManagedNodegroup, min_size: int, max_size: int, desired: int) -> None:
        """A scalingConfig change: EKS sets the Auto Scaling group's sizes."""
        update_group(self.autoscaling, record.asg_name, min_size=min_size, max_size=max_size,
                     desired_capacity=desired)
        record.min_size, record.max_size = min_size, max_size
        record.modified_at = time.time()

    def start_config_update(self, record: ManagedNodegroup, update: Update) -> None:
        record.updates.append(update)
        record.settle_status()

    def start_version_update(self, record: ManagedNodegroup, update: Update, target: Target, force: bool) -> None:
        record.updates.append(update)
        deps = UpdateDeps(self.ec2, self.autoscaling, self._cluster, self._api, self.scenario["timings"],
                          self.recorder.event, self._rng)
        self._version_updates[record.name] = VersionUpdate(deps, record, update, target, force)
        record.settle_status()
        self.recorder.event("eks_update_requested", nodegroup=record.name, update_id=update.id,
                            release_version=target.ami["release_version"], force=force)
