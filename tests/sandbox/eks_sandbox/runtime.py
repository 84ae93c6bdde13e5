# -*- coding: utf-8 -*-
# Copyright: Contributors to the eksops.nodegroup project
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""The sandbox process: AWS and Kubernetes simulators, the controller loop, and the control endpoint.

Start-up order: moto, the Kubernetes API server and the control server start listening; the state files
(kubeconfig, env) are written so `eks-sandbox up` can poll `/healthz`; AWS is seeded (it needs the API
server's URL and CA for the EKS cluster record), then Kubernetes; then the controller loop runs. A scenario of
several clusters runs one ClusterRuntime per cluster (clusters.py): one moto server for all, one API server each.

The sandbox is *ready* once every node group runs its initial instances, their Nodes are Ready and every
workload of the scenario is fully Ready: tests start from a settled cluster. Only then are faults armed
and the observer starts sampling.
"""

from __future__ import annotations

import json
import logging
import os
import shlex
import threading
import time
import traceback
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import TYPE_CHECKING, Any

from .clusters import SANDBOX_WIDE_REPORT_KEYS, ClusterRuntime, FleetInstances, write_fleet_kubeconfig
from .faults import Faults
from .recorder import Recorder
from .scenario.loader import cluster_scenarios

if TYPE_CHECKING:
    from .aws import AwsSim
    from .kube import KubeSim
    from .lb_controllers import LoadBalancerControllers
    from .observer import Observer

__all__ = ["Sandbox", "write_env_file", "read_env_file", "AWS_ACCESS_KEY_ID", "AWS_SECRET_ACCESS_KEY"]

log = logging.getLogger("eks_sandbox")

AWS_ACCESS_KEY_ID = "testing"
AWS_SECRET_ACCESS_KEY = "testing"
ENV_FILE = "env"
KUBECONFIG_FILE = "kubeconfig"
# A failing controller logs its first tracebacks, then only every Nth, so the log stays readable.
_TRACEBACKS_LOGGED_IN_FULL = 5
_TRACEBACK_EVERY = 100


def write_env_file(path: Path, env: dict[str, str]) -> None:
    """Shell-sourceable `export K=V` lines, replaced atomically (a reader never sees half a file)."""
    tmp = path.with_name(path.name + ".tmp")
    tmp.write_text("".join(f"export {key}={shlex.quote(value)}\n" for key, value in env.items()))
    os.replace(tmp, path)


def read_env_file(path: Path) -> dict[str, str]:
    env = {}
    for line in path.read_text().splitlines():
        words = shlex.split(line)
        if len(words) == 2 and words[0] == "export" and "=" in words[1]:
            key, value = words[1].split("=", 1)
            env[key] = value
    return env


class Sandbox:
    """The simulated EKS cluster (or clusters: README "Several clusters") run by this process."""

    def __init__(self, scenario: dict[str, Any], state_dir: str | os.PathLike):
        self.scenario = scenario
        self.state_dir = Path(state_dir).resolve()
        self.recorder = Recorder()  # a single cluster's; with several, the AWS calls (each cluster has its own)
        self.faults = Faults(scenario["faults"], scenario["seed"], armed=False)
        self.multi_cluster = "clusters" in scenario
        self.clusters = [ClusterRuntime(part, Recorder() if self.multi_cluster else self.recorder, self.faults)
                         for part in cluster_scenarios(scenario)]
        self.aws_endpoint: str | None = None
        self.started_at = time.time()
        self.ready_at: float | None = None
        self._ready = threading.Event()
        self._stopping = threading.Event()
        self._readiness_detail = "starting"
        self._settled_passes = 0
        self._loop_thread: threading.Thread | None = None
        self._control: ThreadingHTTPServer | None = None
        self._control_thread: threading.Thread | None = None
        self._errors_lock = threading.Lock()
        self._controller_errors: dict[str, dict[str, Any]] = {}
        self._loop_stats = {"passes": 0, "overruns": 0, "pass_seconds_max": 0.0}

    # The first cluster's parts (a single-cluster sandbox's only ones), as tests and benchmarks reach them.
    aws: AwsSim | None = property(lambda self: self.clusters[0].aws)
    kube: KubeSim | None = property(lambda self: self.clusters[0].kube)
    load_balancers: LoadBalancerControllers | None = property(lambda self: self.clusters[0].load_balancers)
    observer: Observer = property(lambda self: self.clusters[0].observer)

    # --------------------------------------------------------------------------------------------- lifecycle

    @property
    def control_url(self) -> str:
        if self._control is None:
            raise RuntimeError("the control server is not running")
        host, port = self._control.server_address[:2]
        return f"http://{host}:{port}"

    @property
    def kubeconfig_path(self) -> Path:
        return self.state_dir / KUBECONFIG_FILE

    def env(self) -> dict[str, str]:
        """What a client needs to reach this sandbox (the content of DIR/env)."""
        region = self.clusters[0].scenario["region"]
        return {"AWS_ENDPOINT_URL": self.aws_endpoint or "",
                "AWS_ACCESS_KEY_ID": AWS_ACCESS_KEY_ID,
                "AWS_SECRET_ACCESS_KEY": AWS_SECRET_ACCESS_KEY,
                "AWS_REGION": region,
                "AWS_DEFAULT_REGION": region,
                "KUBECONFIG": str(self.kubeconfig_path),
                "SANDBOX_URL": self.control_url}

    def start(self) -> None:
        """Start everything and seed the scenario; returns before the cluster is ready (see wait_ready)."""
        self.state_dir.mkdir(parents=True, exist_ok=True)
        # Imported here, before the clock starts (moto takes seconds to import): the CLI's report/down read state
        # files through this module without loading moto.
        from . import aws, kube, lb_controllers  # noqa: F401 (clusters.py uses them)

        began = time.monotonic()
        first = self.clusters[0]
        self.aws_endpoint = first.start_aws(None, self.recorder)
        for cluster in self.clusters[1:]:
            cluster.start_aws(first, self.recorder)
        for cluster in self.clusters:
            if self.multi_cluster:  # each API server's TLS files in a directory of its own
                cluster.start_kube(FleetInstances(cluster, self.clusters), self.state_dir / "clusters" / cluster.name)
            else:
                cluster.start_kube(cluster.aws, self.state_dir)
        self._start_control_server()
        if self.multi_cluster:
            write_fleet_kubeconfig(self.kubeconfig_path, self.clusters)
        else:
            first.kube.write_kubeconfig(str(self.kubeconfig_path))
        write_env_file(self.state_dir / ENV_FILE, self.env())
        log.info("listening: aws %s, kubernetes %s, control %s", self.aws_endpoint,
                 ", ".join(cluster.kube.url for cluster in self.clusters), self.control_url)
        self._readiness_detail = "seeding"
        for cluster in self.clusters:
            cluster.seed()
        log.info("scenario %s seeded in %.2f s", self.scenario["name"], time.monotonic() - began)
        self._readiness_detail = "waiting for the first controller pass"
        self._loop_thread = threading.Thread(target=self._controller_loop, name="controller-loop", daemon=True)
        self._loop_thread.start()

    def cluster_named(self, name: str | None) -> ClusterRuntime:
        """The cluster of that name; None names a single-cluster sandbox's cluster (ValueError otherwise)."""
        if name is None and not self.multi_cluster:
            return self.clusters[0]
        for cluster in self.clusters:
            if cluster.name == name:
                return cluster
        raise ValueError(f"no cluster {name!r} in the sandbox (clusters: "
                         f"{', '.join(cluster.name for cluster in self.clusters)})")

    def wait_ready(self, timeout: float) -> bool:
        return self._ready.wait(timeout)

    @property
    def ready(self) -> bool:
        return self._ready.is_set()

    @property
    def readiness_detail(self) -> str:
        return "ready" if self.ready else self._readiness_detail

    def stop(self) -> None:
        """Stop whatever was started (safe on a partly started sandbox, and twice)."""
        self._stopping.set()
        if self._loop_thread is not None and self._loop_thread is not threading.current_thread():
            self._loop_thread.join(timeout=10)
        if self._control is not None:
            self._control.shutdown()
            self._control.server_close()
            self._control = None
        for cluster in reversed(self.clusters):  # the first cluster's AwsSim, which serves them all, last
            cluster.stop(log)

    # --------------------------------------------------------------------------------------------- controller loop

    def _controller_loop(self) -> None:
        timings = self.scenario["timings"]
        interval = timings["controller_interval_seconds"]
        next_sample = 0.0
        while not self._stopping.is_set():
            began = time.monotonic()
            for cluster in self.clusters:
                cluster.tick(self._guarded)
            if not self._ready.is_set():
                self._guarded("readiness", self._check_ready)
            elif began >= next_sample:
                self._guarded("observer.sample", self._sample)
                next_sample = began + timings["sample_interval_seconds"]
            elapsed = time.monotonic() - began
            self._loop_stats["passes"] += 1
            self._loop_stats["pass_seconds_max"] = max(self._loop_stats["pass_seconds_max"], elapsed)
            if elapsed > interval:
                self._loop_stats["overruns"] += 1
            self._stopping.wait(max(0.0, interval - elapsed))

    def _guarded(self, where: str, step) -> None:
        """Run one step of the loop; a failing step is logged and counted, and the loop goes on."""
        try:
            step()
        except Exception as exc:  # the loop must outlive a bug in one controller
            with self._errors_lock:
                entry = self._controller_errors.setdefault(where, {"count": 0, "last": ""})
                entry["count"] += 1
                entry["last"] = f"{type(exc).__name__}: {exc}"
                count = entry["count"]
            if count <= _TRACEBACKS_LOGGED_IN_FULL or count % _TRACEBACK_EVERY == 0:
                log.error("%s failed (%d times so far):\n%s", where, count, traceback.format_exc())

    def _sample(self) -> None:
        for cluster in self.clusters:
            cluster.sample()

    def _check_ready(self) -> None:
        detail = self._unsettled()
        if detail:
            self._readiness_detail = detail
            self._settled_passes = 0
            return
        # Settled twice in a row: a DaemonSet whose nodes turned Ready in this very pass has its pods next pass.
        self._settled_passes += 1
        if self._settled_passes < 2:
            return
        self.ready_at = time.time()
        self.faults.arm()
        self._sample()
        self.recorder.event("ready", seconds=round(self.ready_at - self.started_at, 3))
        log.info("sandbox ready in %.2f s", self.ready_at - self.started_at)
        self._ready.set()

    def _unsettled(self) -> str:
        """What the clusters still wait for before the sandbox counts as settled ("" when settled)."""
        if not self.multi_cluster:
            return self.clusters[0].unsettled()
        return "; ".join(f"cluster {cluster.name}: {detail}" for cluster in self.clusters
                         for detail in [cluster.unsettled()] if detail)

    # --------------------------------------------------------------------------------------------- report

    def report(self) -> dict[str, Any]:
        """The report (README "Report"); with several clusters, one section per cluster under `clusters`."""
        with self._errors_lock:
            errors = {where: dict(entry) for where, entry in self._controller_errors.items()}
        extra = {"started_at": round(self.started_at, 3),
                 "ready_at": None if self.ready_at is None else round(self.ready_at, 3),
                 "faults": self.faults.fired_counts(),
                 "controller": {**self._loop_stats, "errors": errors}}
        if not self.multi_cluster:
            return self.clusters[0].report(extra)
        sections = {}
        for cluster in self.clusters:
            section = cluster.report({})
            for key in SANDBOX_WIDE_REPORT_KEYS:
                section.pop(key, None)
            sections[cluster.name] = {"region": cluster.scenario["region"], "arn": cluster.aws.cluster_arn,
                                      "endpoint": cluster.kube.url, **section}
        return {"scenario": self.scenario["name"], "time": round(time.time(), 3), **extra,
                "aws_calls": self.recorder.aws_calls(), "aws_calls_by_agent": self.recorder.aws_calls_by_agent(),
                "aws_call_times": self.recorder.aws_call_times(),
                "clusters": sections}

    # --------------------------------------------------------------------------------------------- control server

    def _start_control_server(self) -> None:
        sandbox = self

        class ControlHandler(BaseHTTPRequestHandler):
            disable_nagle_algorithm = True  # as the API server (kube/server.py): no 40 ms wait per answer

            def do_GET(self) -> None:  # noqa: N802 (http.server's naming)
                if self.path == "/healthz":
                    status = 200 if sandbox.ready else 503
                    self._reply(status, {"ready": sandbox.ready, "detail": sandbox.readiness_detail})
                elif self.path == "/report":
                    if not sandbox.ready:
                        self._reply(503, {"ready": False, "detail": sandbox.readiness_detail})
                        return
                    try:
                        self._reply(200, sandbox.report())
                    except Exception as exc:  # report the failure to the caller as well as the log
                        log.exception("building the report failed")
                        self._reply(500, {"error": f"{type(exc).__name__}: {exc}"})
                else:
                    self._reply(404, {"error": f"no such endpoint: {self.path}"})

            def do_POST(self) -> None:  # noqa: N802 (http.server's naming)
                """POST /apply {"nodegroup", "ami", "instance_refresh"}: the node group's owner applies its code
                (aws/owners.py), as a terraform apply or a CloudFormation stack update would. POST /update-cni
                {"cluster", "ami"}: the cluster's VPC CNI updated to initialize on a never_ready AMI's nodes
                (kube/nodes.py update_cni)."""
                if self.path not in ("/apply", "/update-cni"):
                    self._reply(404, {"error": f"no such endpoint: {self.path}"})
                    return
                if not sandbox.ready:
                    self._reply(503, {"ready": False, "detail": sandbox.readiness_detail})
                    return
                try:
                    body = json.loads(self.rfile.read(int(self.headers.get("Content-Length") or 0)) or b"{}")
                    cluster = sandbox.cluster_named(body.get("cluster"))
                    if self.path == "/update-cni":
                        done = cluster.update_cni(body["ami"])
                    else:
                        done = cluster.aws.apply_owner(body["nodegroup"], body.get("ami"), body.get("instance_refresh"))
                except (KeyError, ValueError) as exc:
                    self._reply(400, {"error": f"{type(exc).__name__}: {exc}"})
                    return
                self._reply(200, {"done": done})

            def _reply(self, status: int, body: dict[str, Any]) -> None:
                data = json.dumps(body).encode()
                self.send_response(status)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)

            def log_message(self, format: str, *args: Any) -> None:  # noqa: A002 (http.server's signature)
                log.debug("control: " + format, *args)

        self._control = ThreadingHTTPServer(("127.0.0.1", 0), ControlHandler)
        self._control.daemon_threads = True
        self._control_thread = threading.Thread(target=self._control.serve_forever, name="control-server",
                                                daemon=True)
        self._control_thread.start()
