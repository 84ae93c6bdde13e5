# -*- coding: utf-8 -*-
# Copyright: Contributors to the eksops.nodegroup project
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Contract (the kubernetes python client's AppsV1Api against a running sandbox): apps/v1 StatefulSets, which every
EKS API server serves - created, read, listed across namespaces and watched as the API serves them, with the
controller's status fields of the apps/v1 API reference ("StatefulSetStatus": observedGeneration, replicas,
readyReplicas, availableReplicas, currentReplicas, updatedReplicas, currentRevision, updateRevision,
collisionCount); pods <name>-<ordinal>, one at a time (OrderedReady), an evicted pod back under its own name, and a
template change rolled out highest ordinal first. Issue 28 item 2: the fleet bake's health gate lists them."""

from __future__ import annotations

import pytest
from kubernetes import client, watch

from harness import one_group, running_with_kube, wait_for


@pytest.fixture(scope="module")
def sandbox():
    with running_with_kube(one_group("statefulsets", "eks-node-1.30", 2)) as started:
        yield started


def statefulset(name: str, image: str = "nginx:1.27") -> client.V1StatefulSet:
    labels = {"app": name}
    return client.V1StatefulSet(
        metadata=client.V1ObjectMeta(name=name),
        spec=client.V1StatefulSetSpec(
            replicas=3, service_name=name, selector=client.V1LabelSelector(match_labels=labels),
            template=client.V1PodTemplateSpec(metadata=client.V1ObjectMeta(labels=labels), spec=client.V1PodSpec(
                containers=[client.V1Container(name="db", image=image)]))))


def settled(sandbox, name: str):
    sts = sandbox.apps.read_namespaced_stateful_set(name, "default")
    status = sts.status
    done = status.observed_generation == sts.metadata.generation and status.ready_replicas == 3 \
        and status.updated_replicas == 3 and status.current_revision == status.update_revision
    return done and sts


def test_a_statefulset_is_served_and_its_controller_writes_its_status(sandbox):
    stream = watch.Watch()
    created = sandbox.apps.create_namespaced_stateful_set("default", statefulset("db"))
    assert created.spec.pod_management_policy == "OrderedReady" and created.spec.update_strategy.type == "RollingUpdate"
    events = []
    for event in stream.stream(sandbox.apps.list_namespaced_stateful_set, "default", timeout_seconds=20,
                               resource_version=created.metadata.resource_version):
        events.append(event["type"])
        if (event["object"].status.ready_replicas or 0) == 3:
            stream.stop()
    assert set(events) == {"MODIFIED"}, events
    sts = wait_for(lambda: settled(sandbox, "db"))
    status = sts.status
    assert (status.replicas, status.available_replicas, status.current_replicas, status.collision_count) == (3, 3, 3, 0)
    assert status.current_revision.startswith("db-")
    pods = sandbox.core.list_namespaced_pod("default", label_selector="app=db").items
    assert sorted(pod.metadata.name for pod in pods) == ["db-0", "db-1", "db-2"]
    assert {pod.metadata.labels["controller-revision-hash"] for pod in pods} == {status.current_revision}
    assert [s.metadata.name for s in sandbox.apps.list_stateful_set_for_all_namespaces().items] == ["db"]


def test_an_evicted_pod_comes_back_under_its_own_name(sandbox):
    wait_for(lambda: settled(sandbox, "db"))
    old_uid = sandbox.core.read_namespaced_pod("db-1", "default").metadata.uid
    sandbox.core.create_namespaced_pod_eviction("db-1", "default", client.V1Eviction(
        metadata=client.V1ObjectMeta(name="db-1", namespace="default")))
    # Between the eviction's delete and the controller's create there is no db-1 (a GET is a 404), as in a real
    # cluster: list by name, which answers an empty list in that window.
    back = wait_for(lambda: next((pod for pod in sandbox.core.list_namespaced_pod(
        "default", field_selector="metadata.name=db-1").items if pod.metadata.uid != old_uid), None))
    assert back.metadata.labels["statefulset.kubernetes.io/pod-name"] == "db-1"
    wait_for(lambda: settled(sandbox, "db"))


def test_a_template_change_rolls_out_and_the_revisions_say_so(sandbox):
    before = wait_for(lambda: settled(sandbox, "db")).status.current_revision
    sandbox.apps.patch_namespaced_stateful_set("db", "default", {"spec": {"template": {"spec": {"containers": [
        {"name": "db", "image": "nginx:1.28"}]}}}})
    rolling = wait_for(lambda: (s := sandbox.apps.read_namespaced_stateful_set("db", "default")).status.update_revision
                       != before and s)
    assert rolling.status.current_revision == before
    after = wait_for(lambda: settled(sandbox, "db"))
    assert after.status.current_revision == after.status.update_revision != before
    images = {p.spec.containers[0].image for p in sandbox.core.list_namespaced_pod("default", label_selector="app=db").items}
    assert images == {"nginx:1.28"}
