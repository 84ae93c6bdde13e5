# -*- coding: utf-8 -*-
# Copyright: Contributors to the eksops.nodegroup project
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Issue 28 item 2: the fleet's bake judges the previous ring's clusters with the upgrade's own health gate (issue 27
item 1, HealthGate), over every Deployment and StatefulSet of the cluster (or of the namespaces given): module
workload_health lists them, then waits as a batch's gate does, failing with HealthGateFailed naming each; check mode
lists and does not wait."""

from __future__ import annotations

import pytest
from kubernetes.client.exceptions import ApiException

from ansible_collections.eksops.nodegroup.plugins.module_utils.errors import HEALTH_GATE_FAILED, NOT_FOUND, UpgradeError
from ansible_collections.eksops.nodegroup.plugins.module_utils.phases import fleet_bake as workload_health

from ..fakes import FakeResponse


def deployment(name, namespace="default", available=2):
    return dict(metadata=dict(name=name, namespace=namespace, generation=1), spec=dict(replicas=2),
                status=dict(observedGeneration=1, replicas=2, updatedReplicas=2, availableReplicas=available))


class Cluster:
    """The reads: every Deployment (``deployments``) and no StatefulSet, and no pod."""

    def __init__(self, deployments, statefulsets_served=True):
        self.deployments = deployments
        self.statefulsets_served = statefulsets_served
        self.calls = []

    def _answer(self, call, items):
        self.calls.append(call)
        return FakeResponse(dict(items=items, metadata=dict(resourceVersion="1")))

    def list_deployment_for_all_namespaces(self, **_kwargs):
        return self._answer(("deployments", None), self.deployments)

    def list_stateful_set_for_all_namespaces(self, **_kwargs):
        if self.statefulsets_served:
            return self._answer(("statefulsets", None), [])
        self.calls.append(("statefulsets", None))
        raise ApiException(status=404, reason="Not Found")

    def list_namespaced_deployment(self, namespace, **_kwargs):
        return self._answer(("deployments", namespace), [d for d in self.deployments if d["metadata"]["namespace"] == namespace])

    def list_namespaced_stateful_set(self, namespace, **_kwargs):
        return self._answer(("statefulsets", namespace), [])

    def list_namespaced_pod(self, namespace, **_kwargs):
        return self._answer(("pods", namespace), [])


class Module:
    def __init__(self, cluster, check_mode=False, **params):
        self.cluster = cluster
        self.check_mode = check_mode
        self.params = dict(dict(cluster_name="c1", namespaces=None, health_gate_timeout=1, where="After the bake"),
                           **params)

    def k8s(self):
        return self.cluster

    def core_v1(self):
        return self.cluster


@pytest.fixture(autouse=True)
def apps_of_the_fake(monkeypatch):
    monkeypatch.setattr(workload_health, "apps_v1", lambda client: client)


def test_issue28_item2_healthy_workloads_of_the_whole_cluster_pass_the_bake():
    cluster = Cluster([deployment("web"), deployment("api", "shop")])
    result = workload_health.run(Module(cluster))
    assert result["changed"] is False and result["health"]["healthy_at"]
    assert result["health"]["workloads"] == ["Deployment default/web", "Deployment shop/api"]
    assert ("deployments", None) in cluster.calls and ("pods", "shop") in cluster.calls


def test_issue28_item2_an_unhealthy_workload_fails_the_bake_with_the_gates_code_naming_it():
    cluster = Cluster([deployment("web"), deployment("api", "shop", available=1)])
    with pytest.raises(UpgradeError) as err:
        workload_health.run(Module(cluster))
    assert err.value.code == HEALTH_GATE_FAILED and err.value.details["workloads"] == ["Deployment shop/api"]
    assert "After the bake" in err.value.msg and "available 1/2" in err.value.msg


def test_issue28_item2_the_namespaces_given_bound_the_bake_and_check_mode_does_not_wait():
    cluster = Cluster([deployment("web"), deployment("api", "shop", available=1)])
    result = workload_health.run(Module(cluster, check_mode=True, namespaces=["shop"]))
    assert result["health"] == dict(workloads=["Deployment shop/api"], healthy_at=None)
    assert all(namespace == "shop" for _kind, namespace in cluster.calls)


def test_issue28_item2_the_bakes_gaps_a_404_on_statefulsets_is_an_error_not_no_workload():
    """Issue 28 item 2, the bake's gaps (a): every EKS API server serves apps/v1 statefulsets, so a 404 on their list
    says the bake reached the wrong server or path; it fails, naming the cluster, instead of judging nothing."""
    cluster = Cluster([deployment("web")], statefulsets_served=False)
    with pytest.raises(UpgradeError) as err:
        workload_health.run(Module(cluster))
    assert err.value.code == NOT_FOUND and err.value.details["status"] == 404
    assert "StatefulSets" in err.value.msg and "cluster c1" in err.value.msg and "kube_context" in err.value.msg


def test_issue28_item2_a_timeout_below_one_second_is_refused_naming_it():
    with pytest.raises(UpgradeError) as err:
        workload_health.run(Module(Cluster([]), health_gate_timeout=0))
    assert err.value.details["parameter"] == "health_gate_timeout"
