# -*- coding: utf-8 -*-
# Copyright: Contributors to the eksops.nodegroup project
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""KubeSim: the simulated Kubernetes API server plus its controllers (see /tests/sandbox/README.md)."""

from __future__ import annotations

import base64
import os
import secrets
import ssl
import threading
from typing import Any

import yaml

from . import objects, seed, tls
from .api import SYSTEM_NAMESPACES, Api
from .auth import Authenticator
from .controllers import Controllers
from .resources import BY_GROUP_VERSION, DAEMONSETS, DEPLOYMENTS, NAMESPACES, NODES, PDBS, PODS
from .server import ApiHttpServer, ServerContext
from .store import Store

_BY_PLURAL = {rt.plural: rt for rt in BY_GROUP_VERSION.values()}


class KubeSim:
    def __init__(self, scenario: dict[str, Any], cloud, recorder, faults, state_dir: str):
        self.scenario = scenario
        self.recorder = recorder
        self.state_dir = state_dir
        self.store = Store()
        self.api = Api(self.store)
        self.admin_token = secrets.token_urlsafe(32)
        self.controllers = Controllers(self.api, scenario, cloud, recorder, faults)
        self._context = ServerContext(self.api, Authenticator(self.admin_token), recorder, faults,
                                      scenario["cluster"]["kubernetes_version"])
        self._server: ApiHttpServer | None = None
        self._thread: threading.Thread | None = None
        self.url = ""
        self.ca_pem: str | None = None
        for namespace in SYSTEM_NAMESPACES:
            self.api.create(NAMESPACES, None, {"metadata": {"name": namespace}})

    # -- server --

    def start(self) -> None:
        ssl_context = None
        if self.scenario["cluster"]["tls"]:
            certificate = tls.generate(self.state_dir)
            self.ca_pem = certificate.ca_pem
            ssl_context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
            ssl_context.load_cert_chain(certificate.cert_path, certificate.key_path)
        self._server = ApiHttpServer(self._context, ssl_context)
        host, port = self._server.server_address[:2]
        self._context.address = f"{host}:{port}"
        self.url = f"{'https' if ssl_context else 'http'}://{host}:{port}"
        self._thread = threading.Thread(target=self._server.serve_forever, kwargs={"poll_interval": 0.05},
                                        name="kube-apiserver", daemon=True)
        self._thread.start()

    def stop(self) -> None:
        self._context.stopping.set()
        with self.store.lock:
            for rt in BY_GROUP_VERSION.values():
                self.store.log(rt).changed.notify_all()
        if self._server is not None:
            self._server.shutdown()
            self._server.server_close()
            self._server = None
        if self._thread is not None:
            self._thread.join(timeout=5)
            self._thread = None

    def write_kubeconfig(self, path: str) -> None:
        cluster: dict[str, Any] = {"server": self.url}
        if self.ca_pem:
            cluster["certificate-authority-data"] = base64.b64encode(self.ca_pem.encode()).decode()
        name = self.scenario["cluster"]["name"]
        config = {"apiVersion": "v1", "kind": "Config", "current-context": name, "preferences": {},
                  "clusters": [{"name": name, "cluster": cluster}],
                  "users": [{"name": "admin", "user": {"token": self.admin_token}}],
                  "contexts": [{"name": name, "context": {"cluster": name, "user": "admin"}}]}
        fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
        with os.fdopen(fd, "w", encoding="utf-8") as handle:
            yaml.safe_dump(config, handle, sort_keys=False)

    # -- scenario --

    def seed(self) -> None:
        with self.store.lock:
            for workload in self.scenario["workloads"]:
                if self.store.get(NAMESPACES, "", workload["namespace"]) is None:
                    self.api.create(NAMESPACES, None, {"metadata": {"name": workload["namespace"]}})
            for workload in self.scenario["workloads"]:
                for pdb in seed.pdb_objects(workload):
                    self.api.create(PDBS, workload["namespace"], pdb)
                plural, obj = seed.workload_object(workload, self.scenario)
                self.api.create(_BY_PLURAL[plural], workload["namespace"], obj)

    def tick(self) -> None:
        self.controllers.tick()

    def snapshot(self, instances: list[dict[str, Any]] | None = None) -> dict[str, Any]:
        """Nodes and workloads now. A node's node group, AMI and launch template version come from its EC2
        instance (`instances`, AwsSim.instances(), matched by providerID), never from its labels: on a real
        cluster only some node groups label their nodes at all."""
        by_id = {i["instance_id"]: i for i in instances or ()}
        with self.store.lock:
            nodes = [self._node_view(node, by_id) for node in self.store.items(NODES)]
            workloads = {f"{w['namespace']}/{w['name']}": self._workload_view(w)
                         for w in self.scenario["workloads"]}
        return {"nodes": sorted(nodes, key=lambda n: n["name"]), "workloads": workloads}

    @staticmethod
    def _node_view(node: dict[str, Any], instances: dict[str, dict[str, Any]]) -> dict[str, Any]:
        labels = node["metadata"].get("labels") or {}
        provider = node["spec"].get("providerID", "")
        instance_id = provider.rsplit("/", 1)[-1] if provider else None
        instance = instances.get(instance_id) or {}
        return {"name": node["metadata"]["name"], "nodegroup": instance.get("nodegroup"),
                "az": labels.get("topology.kubernetes.io/zone"), "instance_id": instance_id,
                "ami": instance.get("image_id"), "lt_version": instance.get("launch_template_version"),
                "ready": objects.node_ready(node), "unschedulable": bool(node["spec"].get("unschedulable")),
                "labels": dict(labels)}

    def _workload_view(self, workload: dict[str, Any]) -> dict[str, Any]:
        namespace, name, kind = workload["namespace"], workload["name"], workload["kind"]
        pods: list[dict[str, Any]] = []
        replicas = 0
        if kind == "Deployment":
            deployment = self.store.get(DEPLOYMENTS, namespace, name)
            if deployment is not None:
                replicas = int(deployment["spec"].get("replicas", 1))
                for rt, key in self.store.dependents(deployment["metadata"]["uid"]):
                    rs = self.store.get(rt, *key)
                    if rs is not None:
                        pods.extend(self.store.get(PODS, *k) for k in self.store.pod_keys_of_controller(
                            rs["metadata"]["uid"]))
        elif kind == "DaemonSet":
            ds = self.store.get(DAEMONSETS, namespace, name)
            if ds is not None:
                replicas = int((ds.get("status") or {}).get("desiredNumberScheduled", 0))
                pods = [self.store.get(PODS, *k) for k in self.store.pod_keys_of_controller(ds["metadata"]["uid"])]
        else:
            pod = self.store.get(PODS, namespace, name)
            replicas = 1
            pods = [pod] if pod is not None else []
        ready = sum(1 for pod in pods if pod is not None and objects.pod_is_ready(pod)
                    and not objects.is_terminating(pod))
        pdb = self.store.get(PDBS, namespace, name) if workload.get("pdb") else None
        min_available = None
        if pdb is not None:
            min_available = (pdb.get("status") or {}).get("desiredHealthy")
            if isinstance(pdb["spec"].get("minAvailable"), int):
                min_available = pdb["spec"]["minAvailable"]
        return {"kind": kind, "replicas": replicas, "ready": ready, "pdb_min_available": min_available}
