# -*- coding: utf-8 -*-
# Copyright: Contributors to the eksops.nodegroup project
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""One cluster of the sandbox (ClusterRuntime): its AWS side in its region, its own Kubernetes API server with its
own controllers and state, its load balancer controllers and its observer. The runtime (runtime.py) runs one per
cluster of the scenario: one for a single-cluster scenario, one per `clusters:` entry otherwise.
"""

from __future__ import annotations

import base64
import os
from pathlib import Path
from typing import TYPE_CHECKING, Any

import yaml

from .observer import Observer
from .recorder import Recorder

if TYPE_CHECKING:
    from .aws import AwsSim
    from .kube import KubeSim
    from .lb_controllers import LoadBalancerControllers

__all__ = ["ClusterRuntime", "FleetInstances", "write_fleet_kubeconfig", "SANDBOX_WIDE_REPORT_KEYS"]

# What a multi-cluster report gives once for the whole sandbox rather than per cluster (README "Several clusters").
SANDBOX_WIDE_REPORT_KEYS = ("started_at", "ready_at", "faults", "controller", "aws_calls", "aws_calls_by_agent",
                            "aws_call_times")


class ClusterRuntime:
    """One cluster: built by start_aws (AWS side) then start_kube (API server), seeded by seed."""

    def __init__(self, scenario: dict[str, Any], recorder: Recorder, faults: Any):
        self.scenario = scenario
        self.recorder = recorder
        self.faults = faults
        self.observer = Observer(scenario, recorder)
        self.aws: AwsSim | None = None
        self.kube: KubeSim | None = None
        self.load_balancers: LoadBalancerControllers | None = None

    @property
    def name(self) -> str:
        return self.scenario["cluster"]["name"]

    def start_aws(self, server_of: "ClusterRuntime | None", calls_recorder: Recorder) -> str:
        """This cluster's AWS side; the first cluster starts the one moto server, the others join it."""
        from .aws import AwsSim

        self.aws = AwsSim(self.scenario, self.recorder, self.faults)
        if server_of is None:
            return self.aws.start(calls_recorder=calls_recorder)
        return self.aws.start(server_of=server_of.aws)

    def start_kube(self, cloud: Any, state_dir: Path) -> None:
        """This cluster's API server and controllers; its kubelets see `cloud`'s instances (and join this cluster
        only when their user data names it)."""
        from .kube import KubeSim
        from .lb_controllers import LoadBalancerControllers

        state_dir.mkdir(parents=True, exist_ok=True)
        self.kube = KubeSim(self.scenario, cloud, self.recorder, self.faults, str(state_dir))
        self.aws.eks.attach_kube(self.kube.api)  # EKS drains managed nodes through the cluster's API
        self.load_balancers = LoadBalancerControllers(self.scenario, self.aws, self.recorder)
        self.kube.start()

    def seed(self) -> None:
        self.aws.seed(self.kube.url, self.kube.ca_pem)
        self.kube.seed()

    def update_cni(self, ami_name: str) -> list[str]:
        """The cluster's VPC CNI updated to initialize on the nodes of never_ready AMI ``ami_name`` (kube/nodes.py);
        the cloud's lock before the store's, as the controllers take them."""
        instances = self.aws.instances()
        with self.kube.store.lock:
            return self.kube.controllers.nodes.update_cni(ami_name, instances)

    def tick(self, guarded) -> None:
        """One pass of this cluster's controllers, each step run through `guarded(where, step)`."""
        guarded("aws.tick", self.aws.tick)
        guarded("kube.tick", self.kube.tick)
        guarded("load_balancers.tick", self._tick_load_balancers)

    def _tick_load_balancers(self) -> None:
        """The AWS Load Balancer Controller and the service controller (lb_controllers.py): after the kubelets and
        EC2 have moved, so a node's new label or an instance's termination is seen in the same pass."""
        if not self.scenario["load_balancers"]:
            return
        from .kube.resources import NODES

        with self.kube.store.lock:
            nodes = [dict(node) for node in self.kube.store.items(NODES)]
        self.load_balancers.tick(nodes, self.aws.instances())

    def sample(self) -> None:
        instances = self.aws.instances()
        self.observer.sample(self.kube.snapshot(instances), instances)

    def unsettled(self) -> str:
        """What the cluster still waits for before it counts as settled ("" when settled)."""
        instances = self.aws.instances()
        snapshot = self.kube.snapshot(instances)
        waiting = []
        ready_nodes = {n["instance_id"] for n in snapshot["nodes"] if n["ready"]}
        for nodegroup in self.scenario["nodegroups"]:
            mine = [i for i in instances if i["nodegroup"] == nodegroup["name"] and i["state"] != "terminated"]
            running = [i for i in mine if i["state"] == "running"]
            ready = [i for i in running if i["instance_id"] in ready_nodes]
            want = nodegroup["desired_capacity"]
            if len(running) != want or len(mine) != want or len(ready) != want:
                waiting.append(f"nodegroup {nodegroup['name']}: {len(running)}/{want} instances running, "
                               f"{len(ready)}/{want} nodes Ready")
        if self.load_balancers is not None and self.load_balancers.unsettled():
            waiting.append(self.load_balancers.unsettled())
        for workload in self.scenario["workloads"]:
            key = f"{workload['namespace']}/{workload['name']}"
            seen = snapshot["workloads"].get(key)
            if seen is None:
                waiting.append(f"{key}: not created yet")
                continue
            want = {"Deployment": workload["replicas"], "Pod": 1}.get(workload["kind"], seen["replicas"] or 0)
            if seen["ready"] < want:
                waiting.append(f"{key}: {seen['ready']}/{want} ready")
        return "; ".join(waiting)

    def report(self, extra: dict[str, Any]) -> dict[str, Any]:
        """The report of this cluster (README "Report"), `extra` merged in."""
        instances = self.aws.instances()
        snapshot = self.kube.snapshot(instances)
        asg_views = {}
        for nodegroup in self.scenario["nodegroups"]:
            try:
                asg_views[nodegroup["name"]] = self.aws.asg_view(nodegroup["name"])
            except Exception as exc:  # e.g. a test deleted the group: report it rather than fail the report
                asg_views[nodegroup["name"]] = {"error": f"{type(exc).__name__}: {exc}"}
        extra = {**extra, "events_dropped": self.recorder.events_dropped(), **self.load_balancers.report()}
        report = self.observer.report(snapshot, asg_views, instances, extra)
        for name, view in report["nodegroups"].items():
            eks_view = self.aws.eks.view(name)
            if eks_view is not None:  # managed node groups: what EKS says about them
                view["eks"] = eks_view
        return report

    def stop(self, log) -> None:
        for name, part in (("kubernetes", self.kube), ("aws", self.aws)):
            if part is None:
                continue
            try:
                part.stop()
            except Exception:  # keep stopping the rest; the process is going away anyway
                log.exception("stopping %s of cluster %s failed", name, self.name)
        self.kube = self.aws = None


class FleetInstances:
    """What one cluster's kubelets boot from in a multi-cluster sandbox: its own node groups' instances, and any
    other cluster's instance whose user data names this cluster (kube/nodes.py joins it, as on AWS, where the
    bootstrap names the cluster and its endpoint). Other clusters' instances are not this API server's business
    otherwise: it never hears of them."""

    def __init__(self, own: ClusterRuntime, clusters: list[ClusterRuntime]):
        self._own = own
        self._others = [cluster for cluster in clusters if cluster is not own]
        self._boots_here: dict[str, bool] = {}  # instance id -> its user data names this cluster (parsed once)

    def instances(self) -> list[dict[str, Any]]:
        from .bootstrap import parse_user_data

        foreign = [i for cluster in self._others for i in cluster.aws.instances()]
        self._boots_here = {i["instance_id"]: self._boots_here[i["instance_id"]] if i["instance_id"] in self._boots_here
                            else parse_user_data(i["user_data"]).cluster_name == self._own.name for i in foreign}
        return self._own.aws.instances() + [i for i in foreign if self._boots_here[i["instance_id"]]]


def write_fleet_kubeconfig(path: Path, clusters: list[ClusterRuntime]) -> None:
    """One cluster, user and context per cluster, each named by the cluster's ARN, as `aws eks update-kubeconfig`
    names them without --alias / --user-alias (awscli customizations/eks/update_kubeconfig.py: "Defaults to match
    cluster ARN"; its documented example prints "Updated context arn:aws:eks:us-east-2:111122223333:cluster/
    my-eks-cluster"). The current context is the first cluster's."""
    entries: dict[str, list[dict[str, Any]]] = {"clusters": [], "users": [], "contexts": []}
    for cluster in clusters:
        arn = cluster.aws.cluster_arn
        server: dict[str, Any] = {"server": cluster.kube.url}
        if cluster.kube.ca_pem:
            server["certificate-authority-data"] = base64.b64encode(cluster.kube.ca_pem.encode()).decode()
        entries["clusters"].append({"name": arn, "cluster": server})
        entries["users"].append({"name": arn, "user": {"token": cluster.kube.admin_token}})
        entries["contexts"].append({"name": arn, "context": {"cluster": arn, "user": arn}})
    config = {"apiVersion": "v1", "kind": "Config", "current-context": clusters[0].aws.cluster_arn,
              "preferences": {}, **entries}
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    with os.fdopen(fd, "w", encoding="utf-8") as handle:
        yaml.safe_dump(config, handle, sort_keys=False)
