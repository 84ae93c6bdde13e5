# -*- coding: utf-8 -*-
# Copyright: Contributors to the eksops.nodegroup project
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""The Eviction API and the disruption controller (SPEC E1-E5), through the official python client."""

from __future__ import annotations

import json
import threading

import pytest
from kubernetes import client
from kubernetes.client.exceptions import ApiException

from eks_sandbox.kube.eviction import MULTIPLE_PDBS_MESSAGE, PDB_VIOLATION_MESSAGE
from eks_sandbox.kube.resources import PDBS, PODS
from eks_sandbox.kube.testing import KubeHarness, scenario


def web(replicas=4, **pdb):
    return scenario(workloads=[{"kind": "Deployment", "name": "web", "replicas": replicas,
                                "termination_grace_period_seconds": 30, "pdb": pdb or {"min_available": 3}}])


@pytest.fixture
def cluster(tmp_path, request):
    params = getattr(request, "param", {})
    with KubeHarness(str(tmp_path), web(**params), nodes=2) as running:
        running.core = client.CoreV1Api(running.api_client())
        running.policy = client.PolicyV1Api(running.api_client())
        running.wait_for(lambda: running.policy.read_namespaced_pod_disruption_budget(
            "web", "default").status.current_healthy == 4, what="4 healthy web pods")
        yield running


def web_pods(cluster):
    return [p for p in cluster.core.list_namespaced_pod("default", label_selector="app=web").items
            if p.metadata.deletion_timestamp is None]


def evict(cluster, pod, delete_options=None):
    body = client.V1Eviction(metadata=client.V1ObjectMeta(name=pod.metadata.name, namespace="default"),
                             delete_options=delete_options)
    return cluster.core.create_namespaced_pod_eviction(pod.metadata.name, "default", body)


def set_ready(cluster, pod_name, ready):
    """Flip a pod's readiness through the store (a probe failing) and wait for the PDB to see it."""
    store = cluster.sim.store
    with store.lock:
        pod = store.get(PODS, "default", pod_name)
        conditions = [{**c, "status": "True" if ready else "False"} if c["type"] in ("Ready", "ContainersReady")
                      else c for c in pod["status"]["conditions"]]
        store.replace(PODS, {**pod, "status": {**pod["status"], "conditions": conditions}})


def test_e5_pdb_status_is_computed_by_the_controller(cluster):
    status = cluster.policy.read_namespaced_pod_disruption_budget("web", "default").status
    assert (status.expected_pods, status.current_healthy, status.desired_healthy, status.disruptions_allowed) \
        == (4, 4, 3, 1)
    assert status.observed_generation == 1
    assert [c.type for c in status.conditions] == ["DisruptionAllowed"] and status.conditions[0].status == "True"


@pytest.mark.parametrize("cluster", [{"max_unavailable": "50%"}], indirect=True)
def test_e5_max_unavailable_percentage_uses_the_deployment_scale(cluster):
    status = cluster.policy.read_namespaced_pod_disruption_budget("web", "default").status
    assert (status.expected_pods, status.desired_healthy, status.disruptions_allowed) == (4, 2, 2)


def test_done_when_1_two_concurrent_evictions_one_201_one_429(cluster):
    """Z1/D13: 4 replicas, minAvailable 3: of two evictions at once exactly one passes."""
    pods = web_pods(cluster)[:2]
    results = []

    def attempt(pod):
        try:
            evict(cluster, pod)
            results.append(201)
        except ApiException as error:
            results.append(error)
    threads = [threading.Thread(target=attempt, args=(pod,)) for pod in pods]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    refused = [r for r in results if r != 201]
    assert results.count(201) == 1 and len(refused) == 1
    error = refused[0]
    assert error.status == 429
    body = json.loads(error.body)
    assert body["message"] == PDB_VIOLATION_MESSAGE
    assert body["details"]["causes"][0]["type"] == "DisruptionBudget"
    assert "Retry-After" not in error.headers
    status = cluster.policy.read_namespaced_pod_disruption_budget("web", "default").status
    assert status.disruptions_allowed == 0


def test_e4_evicted_pod_gets_disruption_target_and_is_deleted_gracefully(cluster):
    pod = web_pods(cluster)[0]
    evict(cluster, pod)
    with cluster.sim.store.lock:
        stored = cluster.sim.store.get(PODS, "default", pod.metadata.name)
        pdb_status = cluster.sim.store.get(PDBS, "default", "web")["status"]
    if stored is not None:
        assert stored["metadata"]["deletionTimestamp"]
        target = [c for c in stored["status"]["conditions"] if c["type"] == "DisruptionTarget"]
        assert target and target[0]["reason"] == "EvictionByEvictionAPI" and target[0]["status"] == "True"
    assert pod.metadata.name in pdb_status.get("disruptedPods", {}) or stored is None or \
        pdb_status["currentHealthy"] == 3
    cluster.wait_for(lambda: len(web_pods(cluster)) == 4 and cluster.policy.read_namespaced_pod_disruption_budget(
        "web", "default").status.disruptions_allowed == 1, what="replacement ready, budget back")


def test_e4_eviction_honours_delete_options(cluster):
    pod = web_pods(cluster)[0]
    with pytest.raises(ApiException) as conflict:
        evict(cluster, pod, client.V1DeleteOptions(preconditions=client.V1Preconditions(uid="other-uid")))
    assert conflict.value.status == 409
    evict(cluster, pod, client.V1DeleteOptions(grace_period_seconds=0,
                                               preconditions=client.V1Preconditions(uid=pod.metadata.uid)))
    with pytest.raises(ApiException) as gone:
        cluster.core.read_namespaced_pod(pod.metadata.name, "default")
    assert gone.value.status == 404  # grace period 0: deleted at once


def test_eviction_of_a_missing_pod_is_404(cluster):
    with pytest.raises(ApiException) as missing:
        cluster.core.create_namespaced_pod_eviction("nope", "default", client.V1Eviction(
            metadata=client.V1ObjectMeta(name="nope")))
    assert missing.value.status == 404


def test_e4_stale_pdb_generation_is_429_with_retry_after_10(cluster):
    with cluster.paused():  # the disruption controller has not seen the new generation yet
        with cluster.sim.store.lock:
            pdb = cluster.sim.store.get(PDBS, "default", "web")
            cluster.sim.store.replace(PDBS, {**pdb, "spec": {**pdb["spec"], "minAvailable": 2}},
                                      bump_generation=True)
        with pytest.raises(ApiException) as stale:
            evict(cluster, web_pods(cluster)[0])
    assert stale.value.status == 429 and stale.value.headers["Retry-After"] == "10"
    body = json.loads(stale.value.body)
    assert body["details"]["causes"][0]["type"] == "DisruptionBudget" and body["details"]["retryAfterSeconds"] == 10
    cluster.wait_for(lambda: cluster.policy.read_namespaced_pod_disruption_budget(
        "web", "default").status.observed_generation == 2, what="controller catches up")
    evict(cluster, web_pods(cluster)[0])


def test_e2_pod_under_two_pdbs_is_500(cluster):
    cluster.policy.create_namespaced_pod_disruption_budget("default", {
        "metadata": {"name": "web-again"}, "spec": {"maxUnavailable": 1, "selector": {"matchLabels": {"app": "web"}}}})
    with pytest.raises(ApiException) as error:
        evict(cluster, web_pods(cluster)[0])
    assert error.value.status == 500 and json.loads(error.value.body)["message"] == MULTIPLE_PDBS_MESSAGE


def test_e2_pod_without_pdb_is_deleted(cluster):
    cluster.policy.delete_namespaced_pod_disruption_budget("web", "default")
    for pod in web_pods(cluster):  # all four: no budget protects them
        evict(cluster, pod)


def sync_budgets(cluster):
    with cluster.sim.store.lock:
        cluster.sim.controllers._sync_disruption_budgets()


def test_e1_pending_and_terminating_pods_skip_the_budget(cluster):
    with cluster.paused():
        with cluster.sim.store.lock:
            pdb = cluster.sim.store.get(PDBS, "default", "web")
            cluster.sim.store.replace(PDBS, {**pdb, "status": {**pdb["status"], "disruptionsAllowed": 0}})
        pending = cluster.core.create_namespaced_pod("default", {
            "metadata": {"name": "pending", "labels": {"app": "web"}},
            "spec": {"containers": [{"name": "c", "image": "x"}], "nodeName": "nowhere"}})
        healthy = next(p for p in web_pods(cluster) if p.status.phase == "Running")
        with pytest.raises(ApiException) as refused:
            evict(cluster, healthy)
        assert refused.value.status == 429
        evict(cluster, pending)
        cluster.core.delete_namespaced_pod(healthy.metadata.name, "default", grace_period_seconds=30)
        evict(cluster, healthy)  # already terminating: no budget needed


@pytest.mark.parametrize("cluster", [{"min_available": 3, "unhealthy_pod_eviction_policy": "AlwaysAllow"}],
                         indirect=True)
def test_e3_unready_pod_with_always_allow_goes_even_without_budget(cluster):
    pods = web_pods(cluster)
    set_ready(cluster, pods[0].metadata.name, False)
    set_ready(cluster, pods[1].metadata.name, False)
    cluster.wait_for(lambda: cluster.policy.read_namespaced_pod_disruption_budget(
        "web", "default").status.current_healthy == 2)
    evict(cluster, pods[0])


def test_e3_unready_pod_with_if_healthy_budget(cluster):
    pods = web_pods(cluster)
    with cluster.paused():  # no replacement pods while the budget is examined
        set_ready(cluster, pods[0].metadata.name, False)
        sync_budgets(cluster)
        status = cluster.policy.read_namespaced_pod_disruption_budget("web", "default").status
        assert (status.current_healthy, status.desired_healthy, status.disruptions_allowed) == (3, 3, 0)
        # currentHealthy 3 >= desiredHealthy 3: the unready pod goes without spending the (zero) budget.
        evict(cluster, pods[0])
        set_ready(cluster, pods[1].metadata.name, False)
        sync_budgets(cluster)
        assert cluster.policy.read_namespaced_pod_disruption_budget("web", "default").status.current_healthy == 2
        # currentHealthy 2 < 3: handled as a healthy pod (E4) with no budget left -> 429.
        with pytest.raises(ApiException) as refused:
            evict(cluster, pods[1])
        assert refused.value.status == 429
        assert json.loads(refused.value.body)["details"]["causes"][0]["type"] == "DisruptionBudget"
