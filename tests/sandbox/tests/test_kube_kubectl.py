# -*- coding: utf-8 -*-
# Copyright: Contributors to the eksops.nodegroup project
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""kubectl (v1.32 at /usr/bin/kubectl) against the simulated API server, over TLS: get (the server-side Table
columns of pods, nodes, events, PDBs, deployments), cordon, drain."""

from __future__ import annotations

import datetime
import os
import re
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


def printed(stdout):
    """kubectl's table as (header, rows of {column: cell}): columns are cut where the header's names start (a
    name may hold one space, as "NOMINATED NODE"; columns are at least three spaces apart)."""
    lines = [line for line in stdout.splitlines() if line.strip()]
    starts = [match.start() for match in re.finditer(r"\S+(?: \S+)*", lines[0])]
    header = [lines[0][a:b].strip() for a, b in zip(starts, starts[1:] + [None])]
    rows = [{name: line[a:b].strip() for name, a, b in zip(header, starts, starts[1:] + [None])}
            for line in lines[1:]]
    return header, rows


def test_kubectl_get_pods_wide_shows_ip_and_node(cluster):
    """Item 17: the pod table's priority 1 columns (printers.go podColumnDefinitions), shown by -o wide."""
    result = kubectl(cluster, "get", "pods", "-o", "wide")
    assert result.returncode == 0, result.stderr
    header, rows = printed(result.stdout)
    assert header == ["NAME", "READY", "STATUS", "RESTARTS", "AGE", "IP", "NODE", "NOMINATED NODE",
                      "READINESS GATES"]
    pods = {p.metadata.name: p for p in cluster.core.list_namespaced_pod("default").items}
    assert sorted(row["NAME"] for row in rows) == sorted(pods)
    for row in rows:
        pod = pods[row["NAME"]]
        assert (row["READY"], row["STATUS"], row["RESTARTS"]) == ("1/1", "Running", "0")
        assert row["NODE"] == pod.spec.node_name and row["NODE"].startswith("ip-10-")
        assert row["IP"] == pod.status.pod_ip
        assert (row["NOMINATED NODE"], row["READINESS GATES"]) == ("<none>", "<none>")
        assert re.fullmatch(r"\d+s|\d+m\d*s?", row["AGE"])
    narrow = kubectl(cluster, "get", "pods")
    assert printed(narrow.stdout)[0] == ["NAME", "READY", "STATUS", "RESTARTS", "AGE"]


def test_kubectl_get_pdb_shows_allowed_disruptions(cluster):
    """Item 17: printPodDisruptionBudget's columns, the budget's own numbers."""
    policy = client.PolicyV1Api(cluster.api_client())
    cluster.wait_for(lambda: policy.read_namespaced_pod_disruption_budget("web", "default").status
                     .disruptions_allowed == 1, what="web's budget to allow 1 disruption")
    result = kubectl(cluster, "get", "pdb")
    assert result.returncode == 0, result.stderr
    header, rows = printed(result.stdout)
    assert header == ["NAME", "MIN AVAILABLE", "MAX UNAVAILABLE", "ALLOWED DISRUPTIONS", "AGE"]
    assert [(r["NAME"], r["MIN AVAILABLE"], r["MAX UNAVAILABLE"], r["ALLOWED DISRUPTIONS"]) for r in rows] == \
        [("web", "3", "N/A", "1")]


def test_kubectl_get_deployments_shows_replica_counts_and_wide_template(cluster):
    """Item 17: printDeployment (READY is ready/desired; -o wide adds containers, images, selector)."""
    result = kubectl(cluster, "get", "deployments", "-o", "wide")
    assert result.returncode == 0, result.stderr
    header, rows = printed(result.stdout)
    assert header == ["NAME", "READY", "UP-TO-DATE", "AVAILABLE", "AGE", "CONTAINERS", "IMAGES", "SELECTOR"]
    by_name = {row["NAME"]: row for row in rows}
    assert [by_name["web"][c] for c in ("READY", "UP-TO-DATE", "AVAILABLE", "CONTAINERS", "SELECTOR")] == \
        ["4/4", "4", "4", "app", "app=web"]
    assert by_name["cache"]["READY"] == "1/1"
    assert by_name["web"]["IMAGES"] == "public.ecr.aws/nginx/nginx:1.27"
    header = printed(kubectl(cluster, "get", "deploy").stdout)[0]
    assert header == ["NAME", "READY", "UP-TO-DATE", "AVAILABLE", "AGE"]


def test_kubectl_get_nodes_wide_shows_addresses_and_node_info(cluster):
    """Item 17: printNode's wide columns, from the node's status."""
    result = kubectl(cluster, "get", "nodes", "-o", "wide")
    assert result.returncode == 0, result.stderr
    header, rows = printed(result.stdout)
    assert header == ["NAME", "STATUS", "ROLES", "AGE", "VERSION", "INTERNAL-IP", "EXTERNAL-IP", "OS-IMAGE",
                      "KERNEL-VERSION", "CONTAINER-RUNTIME"]
    nodes = {n.metadata.name: n for n in cluster.core.list_node().items}
    assert sorted(row["NAME"] for row in rows) == sorted(nodes)
    for row in rows:
        node = nodes[row["NAME"]]
        info = node.status.node_info
        internal = next(a.address for a in node.status.addresses if a.type == "InternalIP")
        assert [row[c] for c in header[1:] if c != "AGE"] == [
            "Ready", "<none>", info.kubelet_version, internal, "<none>", info.os_image, info.kernel_version,
            info.container_runtime_version]


def test_kubectl_get_events_shows_what_happened_to_which_object(cluster):
    """Item 17: printEvent, with an event recorded as the collection records one (drain.record_event)."""
    node = cluster.core.list_node().items[0].metadata
    now = datetime.datetime.now(datetime.timezone.utc)
    cluster.core.create_namespaced_event("default", client.CoreV1Event(
        metadata=client.V1ObjectMeta(name=f"{node.name}.drain", namespace="default"),
        involved_object=client.V1ObjectReference(api_version="v1", kind="Node", name=node.name, uid=node.uid),
        reason="NodeDrainStarted", message="Draining the node for the upgrade", type="Normal", count=1,
        first_timestamp=now - datetime.timedelta(seconds=150), last_timestamp=now,
        source=client.V1EventSource(component="eksops.nodegroup")))
    result = kubectl(cluster, "get", "events")
    assert result.returncode == 0, result.stderr
    header, rows = printed(result.stdout)
    assert header == ["LAST SEEN", "TYPE", "REASON", "OBJECT", "MESSAGE"]
    assert [(r["TYPE"], r["REASON"], r["OBJECT"], r["MESSAGE"]) for r in rows] == \
        [("Normal", "NodeDrainStarted", f"node/{node.name}", "Draining the node for the upgrade")]
    assert re.fullmatch(r"\d+s", rows[0]["LAST SEEN"])
    wide = kubectl(cluster, "get", "events", "-o", "wide")
    header, rows = printed(wide.stdout)
    assert header == ["LAST SEEN", "TYPE", "REASON", "OBJECT", "SUBOBJECT", "SOURCE", "MESSAGE", "FIRST SEEN",
                      "COUNT", "NAME"]
    assert [rows[0][c] for c in ("SUBOBJECT", "SOURCE", "COUNT", "NAME")] == \
        ["", "eksops.nodegroup", "1", f"{node.name}.drain"]
    assert re.fullmatch(r"2m3\ds", rows[0]["FIRST SEEN"])


def test_kubectl_get_pods_watch_prints_changes_under_one_header(cluster):
    """Item 17: a watch asked as Table (kubectl get -w) gets column definitions with its first event only."""
    watcher = subprocess.Popen([KUBECTL, "get", "pods", "-l", "app=cache", "-w", "--request-timeout=4s"],
                               env={**os.environ, "KUBECONFIG": cluster.kubeconfig}, stdout=subprocess.PIPE,
                               stderr=subprocess.PIPE, text=True)
    time.sleep(1.5)  # kubectl has listed and is watching
    pod = cluster.core.list_namespaced_pod("default", label_selector="app=cache").items[0].metadata.name
    cluster.core.delete_namespaced_pod(pod, "default")
    out, err = watcher.communicate(timeout=30)
    assert watcher.returncode == 0, err
    lines = out.splitlines()
    assert [line.split() for line in lines if line.startswith("NAME")] == [["NAME", "READY", "STATUS", "RESTARTS",
                                                                           "AGE"]]
    assert any(line.split()[:3] == [pod, "1/1", "Terminating"] for line in lines), out
    assert any(line.split()[1:3] == ["1/1", "Running"] and line.split()[0] != pod for line in lines), out


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
