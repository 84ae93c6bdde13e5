"""kubectl (v1.32 at /usr/bin/kubectl) against the simulated API server, over TLS: get, cordon, drain."""

from __future__ import annotations

import os
import shutil
import subprocess
import time

import pytest
from kubernetes import client

from eks_sandbox.kube.testing import KubeHarness, scenario

KUBECTL = shutil.which("kubectl")
pytestmark = pytest.mark.skipif(KUBECTL is None, reason="kubectl is not on PATH; the kubectl contract tests "
                                                        "need it (expected at /usr/bin/kubectl)")


@pytest.fixture
def cluster(tmp_path):
    sc = scenario(cluster={"tls": True},
                  workloads=[{"kind": "Deployment", "name": "web", "replicas": 4, "pdb": {"min_available": 3}},
                             {"kind": "DaemonSet", "name": "agent"},
                             {"kind": "Deployment", "name": "cache", "replicas": 1, "empty_dir": True}])
    with KubeHarness(str(tmp_path), sc, nodes=2) as running:
        running.core = client.CoreV1Api(running.api_client())
        running.wait_for(lambda: len([p for p in running.core.list_namespaced_pod("default").items
                                      if p.status.phase == "Running"]) == 7, what="7 pods running")
        yield running


def kubectl(cluster, *args, timeout=60):
    env = {**os.environ, "KUBECONFIG": cluster.kubeconfig}
    return subprocess.run([KUBECTL, *args], env=env, capture_output=True, text=True, timeout=timeout,
                          check=False)


def test_kubectl_get_nodes_and_pods(cluster):
    nodes = kubectl(cluster, "get", "nodes")
    assert nodes.returncode == 0, nodes.stderr
    assert nodes.stdout.split("\n")[0].split() == ["NAME", "STATUS", "ROLES", "AGE", "VERSION"]
    assert nodes.stdout.count(" Ready ") == 2
    pods = kubectl(cluster, "get", "pods", "-A", "-o", "name")
    assert pods.returncode == 0, pods.stderr
    assert len(pods.stdout.split()) == 7


def test_kubectl_cordon_and_uncordon(cluster):
    node = cluster.core.list_node().items[0].metadata.name
    assert kubectl(cluster, "cordon", node).returncode == 0
    assert cluster.core.read_node(node).spec.unschedulable is True
    assert "SchedulingDisabled" in kubectl(cluster, "get", "node", node).stdout
    assert kubectl(cluster, "uncordon", node).returncode == 0
    assert not cluster.core.read_node(node).spec.unschedulable


def test_done_when_2_kubectl_drain_retries_on_pdb_429_and_finishes(cluster):
    """D13/E4: drain evicts through policy/v1, is refused by the PDB while a replacement starts, retries
    (kubectl waits 5 s), and completes once the replacement is Ready."""
    web_on = {}
    for pod in cluster.core.list_namespaced_pod("default", label_selector="app=web").items:
        web_on.setdefault(pod.spec.node_name, []).append(pod.metadata.name)
    node = max(web_on, key=lambda n: len(web_on[n]))
    assert len(web_on[node]) >= 2  # two web pods on the node: the second eviction hits the budget
    started = time.monotonic()
    result = kubectl(cluster, "drain", node, "--ignore-daemonsets", "--delete-emptydir-data", "--timeout=60s",
                     timeout=90)
    assert result.returncode == 0, result.stderr
    assert f"node/{node} drained" in result.stdout
    assert "Cannot evict pod as it would violate the pod's disruption budget." in result.stderr
    assert time.monotonic() - started >= 5  # kubectl's PDB retry interval
    left = cluster.core.list_pod_for_all_namespaces(field_selector=f"spec.nodeName={node}").items
    assert [p.metadata.labels["app"] for p in left] == ["agent"]
    counts = cluster.recorder.k8s_requests()
    assert any(key.startswith("kubectl/") and key.endswith("create pods/eviction 429") for key in counts)
    cluster.wait_for(lambda: len([p for p in cluster.core.list_namespaced_pod("default", label_selector="app=web")
                                  .items if p.status.phase == "Running"]) == 4)
