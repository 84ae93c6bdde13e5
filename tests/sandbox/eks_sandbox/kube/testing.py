# -*- coding: utf-8 -*-
# Copyright: Contributors to the eksops.nodegroup project
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Test support: an in-process fake cloud and a harness running KubeSim with its controllers ticking."""

from __future__ import annotations

import base64
import contextlib
import copy
import itertools
import threading
import time
from typing import Any, Callable, Iterator

from ..conventions import node_group_labels, node_user_data
from ..faults import Faults
from ..recorder import Recorder
from ..scenario.loader import load_scenario
from .sim import KubeSim

# The one set of fast timings for tests of the sandbox (tests/sandbox/tests: the kube harness here and the EKS
# contract tests through scenario()); the eks_* ones only matter to managed node groups.
FAST_TIMINGS = {"instance_pending_seconds": 0.05, "instance_shutdown_seconds": 0.05, "node_boot_seconds": 0.05,
                "node_removal_seconds": 0.2, "pod_start_seconds": 0.1, "grace_period_scale": 0.01,
                "controller_interval_seconds": 0.02, "sample_interval_seconds": 0.1,
                "eks_drain_timeout_seconds": 1.0, "eks_post_drain_wait_seconds": 0.05,
                "eks_node_ready_timeout_seconds": 5.0}


class FakeCloud:
    """Stands in for AwsSim.instances(): a settable list of instances, each with the user data its node
    group's launch template would give it (aws.seed.node_user_data)."""

    def __init__(self, scenario_dict: dict[str, Any]):
        self._lock = threading.Lock()
        self._instances: dict[str, dict[str, Any]] = {}
        self._numbers = itertools.count(1)
        self.scenario = scenario_dict
        self.region = scenario_dict["region"]

    def user_data(self, nodegroup: str) -> str:
        """Plain-text user data of `nodegroup`'s launch template (as AwsSim.instances() reports it)."""
        spec = next(ng for ng in self.scenario["nodegroups"] if ng["name"] == nodegroup)
        ami = next(a for a in self.scenario["amis"] if a["name"] == spec["ami"])
        cluster = self.scenario["cluster"]["name"]
        encoded = node_user_data(self.scenario, spec, ami["family"], "https://kube.invalid", None,
                                 node_group_labels(cluster, spec))
        return base64.b64decode(encoded).decode()

    def add(self, nodegroup: str = "workers", az: str = "us-west-2a", image_id: str = "ami-00000000000000001",
            lt_version: int = 1, state: str = "running", instance_type: str = "m5.large",
            user_data: str | None = None) -> dict[str, Any]:
        number = next(self._numbers)
        instance = {"instance_id": f"i-{number:017x}", "availability_zone": az, "state": state,
                    "image_id": image_id, "launch_template_id": "lt-0123456789abcdef0",
                    "launch_template_version": lt_version, "asg_name": f"{nodegroup}-asg",
                    "nodegroup": nodegroup, "instance_type": instance_type,
                    "user_data": self.user_data(nodegroup) if user_data is None else user_data,
                    "private_dns_name": f"ip-10-0-{number // 250}-{number % 250 + 1}.{self.region}.compute.internal"}
        with self._lock:
            self._instances[instance["instance_id"]] = instance
        return dict(instance)

    def set_state(self, instance_id: str, state: str) -> None:
        with self._lock:
            self._instances[instance_id]["state"] = state

    def instances(self) -> list[dict[str, Any]]:
        with self._lock:
            return [dict(instance) for instance in self._instances.values()]


def scenario(**overrides: Any) -> dict[str, Any]:
    """A validated scenario: one node group `workers` on ami-00000000000000001, TLS off, fast timings. Each
    override replaces its key, except a dict for a dict key (cluster, timings), which is merged into it."""
    raw: dict[str, Any] = {
        "name": "kube-test", "cluster": {"name": "kube-test", "tls": False, "kubernetes_version": "1.30"},
        "availability_zones": ["us-west-2a", "us-west-2b", "us-west-2c"],
        "timings": dict(FAST_TIMINGS),
        "amis": [{"name": "eks-node-1.30", "id": "ami-00000000000000001", "kubernetes_version": "1.30"},
                 {"name": "broken-1.30", "id": "ami-0000000000000dead", "kubernetes_version": "1.30",
                  "never_ready": True, "recommended": False}],
        "nodegroups": [{"name": "workers", "ami": "eks-node-1.30", "min_size": 0, "max_size": 200,
                        "desired_capacity": 0}],
        "workloads": [],
    }
    for key, value in overrides.items():
        raw[key] = {**raw[key], **value} if isinstance(raw.get(key), dict) and isinstance(value, dict) else value
    return load_scenario(copy.deepcopy(raw))


class KubeHarness:
    """KubeSim started on a free port, seeded, with tick() driven from a background thread."""

    def __init__(self, state_dir: str, scenario_dict: dict[str, Any] | None = None, nodes: int = 0,
                 faults: list[dict[str, Any]] | None = None, tick: bool = True):
        self.scenario = scenario_dict or scenario()
        self.cloud = FakeCloud(self.scenario)
        for i in range(nodes):
            self.cloud.add(az=self.scenario["availability_zones"][i % len(self.scenario["availability_zones"])])
        self.recorder = Recorder()
        self.faults = Faults(faults or [], 0)
        self.sim = KubeSim(self.scenario, self.cloud, self.recorder, self.faults, state_dir)
        self.kubeconfig = f"{state_dir}/kubeconfig"
        self.tick_errors: list[BaseException] = []
        self._ticking = tick
        self._stop = threading.Event()
        self._tick_lock = threading.Lock()
        self._thread: threading.Thread | None = None

    def __enter__(self) -> "KubeHarness":
        self.sim.start()
        self.sim.write_kubeconfig(self.kubeconfig)
        self.sim.seed()
        if self._ticking:
            self._thread = threading.Thread(target=self._loop, daemon=True)
            self._thread.start()
        return self

    def __exit__(self, *exc_info: Any) -> None:
        self._stop.set()
        if self._thread is not None:
            self._thread.join(timeout=5)
        self.sim.stop()

    def _loop(self) -> None:
        interval = self.scenario["timings"]["controller_interval_seconds"]
        while not self._stop.wait(interval):
            try:
                with self._tick_lock:
                    self.sim.tick()
            except BaseException as error:  # surfaced by the tests through tick_errors
                self.tick_errors.append(error)
                raise

    @contextlib.contextmanager
    def paused(self) -> Iterator[None]:
        """No controller runs inside this block (tests that need the cluster to hold still)."""
        with self._tick_lock:
            yield

    def api_client(self, token: str | None = None):
        from kubernetes import client
        configuration = client.Configuration()
        configuration.host = self.sim.url
        configuration.api_key = {"authorization": f"Bearer {token or self.sim.admin_token}"}
        if self.sim.ca_pem:
            configuration.ssl_ca_cert = f"{self.sim.state_dir}/ca.crt"
        return client.ApiClient(configuration)

    def wait_for(self, predicate: Callable[[], Any], timeout: float = 10.0, what: str = "condition") -> Any:
        deadline = time.monotonic() + timeout
        while True:
            value = predicate()
            if value:
                return value
            if self.tick_errors:
                raise AssertionError(f"controller tick failed: {self.tick_errors[0]!r}")
            if time.monotonic() > deadline:
                raise AssertionError(f"timed out after {timeout}s waiting for {what}")
            time.sleep(0.02)
