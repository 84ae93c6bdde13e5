# -*- coding: utf-8 -*-
# Copyright: Contributors to the eksops.nodegroup project
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Contract tests of the simulated Kubernetes API server, driven by the official python client (and raw HTTP
where the client hides what is on the wire): discovery, auth, verbs, selectors, paging, watch, patch, faults."""

from __future__ import annotations

import base64
import json
import re
import socket
import threading
import time
import urllib.error
import urllib.request

import boto3
import pytest
from kubernetes import client, watch
from kubernetes.client.exceptions import ApiException

from eks_sandbox.kube.resources import NODES, PDBS
from eks_sandbox.kube.server import ApiRequestHandler
from eks_sandbox.kube.testing import KubeHarness, scenario


@pytest.fixture
def harness(tmp_path):
    with KubeHarness(str(tmp_path), nodes=2) as running:
        running.wait_for(lambda: running.sim.store.count(NODES) == 2)
        yield running


@pytest.fixture
def core(harness):
    return client.CoreV1Api(harness.api_client())


def raw(harness, method, path, body=None, token=None, content_type="application/json", headers=None):
    """(status, parsed body, headers) of one request, bypassing the python client."""
    data = None if body is None else json.dumps(body).encode()
    request = urllib.request.Request(harness.sim.url + path, data=data, method=method)
    if token is not False:
        request.add_header("Authorization", f"Bearer {token or harness.sim.admin_token}")
    if data is not None:
        request.add_header("Content-Type", content_type)
    for name, value in (headers or {}).items():
        request.add_header(name, value)
    try:
        with urllib.request.urlopen(request, timeout=10) as response:
            return response.status, json.loads(response.read() or b"null"), response.headers
    except urllib.error.HTTPError as error:
        return error.code, json.loads(error.read() or b"null"), error.headers


def make_pod(name, labels=None, node=None, namespace="default", phase=None):
    pod = {"apiVersion": "v1", "kind": "Pod",
           "metadata": {"name": name, "namespace": namespace, "labels": labels or {}},
           "spec": {"containers": [{"name": "c", "image": "busybox"}]}}
    if node:
        pod["spec"]["nodeName"] = node
    return pod


def eks_token(cluster="kube-test", signed_at=None):
    """An EKS bearer token minted as aws-iam-authenticator and `aws eks get-token` mint it."""
    sts = boto3.session.Session(aws_access_key_id="AKIDEXAMPLE", aws_secret_access_key="secret",
                                region_name="us-west-2").client("sts")

    def add_cluster_header(request, **_):
        request.headers["x-k8s-aws-id"] = cluster
    sts.meta.events.register("before-sign.sts.GetCallerIdentity", add_cluster_header)
    url = sts.generate_presigned_url("get_caller_identity", Params={}, ExpiresIn=60, HttpMethod="GET")
    if signed_at is not None:
        stamp = time.strftime("%Y%m%dT%H%M%SZ", time.gmtime(signed_at))
        url = re.sub(r"X-Amz-Date=\d{8}T\d{6}Z", f"X-Amz-Date={stamp}", url)
    return "k8s-aws-v1." + base64.urlsafe_b64encode(url.encode()).decode().rstrip("=")


# -- discovery and auth --

def test_discovery_documents_list_resources_and_eviction_subresource(harness):
    status, core_versions, dummy = raw(harness, "GET", "/api")
    assert status == 200 and core_versions["versions"] == ["v1"]
    dummy, v1, dummy = raw(harness, "GET", "/api/v1")
    names = {r["name"]: r for r in v1["resources"]}
    assert {"nodes", "pods", "namespaces", "events", "pods/status"} <= set(names)
    assert names["pods/eviction"]["group"] == "policy" and names["pods/eviction"]["kind"] == "Eviction"
    dummy, groups, dummy = raw(harness, "GET", "/apis")
    assert {g["name"] for g in groups["groups"]} == {"apps", "policy"}
    dummy, apps, dummy = raw(harness, "GET", "/apis/apps/v1")
    assert {r["name"] for r in apps["resources"]} >= {"deployments", "replicasets", "daemonsets"}
    dummy, version, dummy = raw(harness, "GET", "/version", token=False)
    assert version["major"] == "1" and version["gitVersion"].startswith("v1.30")
    assert raw(harness, "GET", "/apis/batch/v1")[0] == 404


def test_admin_token_and_fresh_eks_token_are_accepted(harness):
    """P5: an EKS token (presigned STS GetCallerIdentity with x-k8s-aws-id) authenticates; so does the admin one."""
    assert raw(harness, "GET", "/api/v1/nodes")[0] == 200
    core = client.CoreV1Api(harness.api_client(token=eks_token()))
    assert len(core.list_node().items) == 2


@pytest.mark.parametrize("token", [
    pytest.param(lambda: eks_token(signed_at=time.time() - 16 * 60), id="expired-eks-token"),
    pytest.param(lambda: "k8s-aws-v1." + base64.urlsafe_b64encode(
        b"https://sts.amazonaws.com/?Action=ListUsers&X-Amz-Date=20990101T000000Z").decode(), id="not-sts"),
    pytest.param(lambda: "k8s-aws-v1.!!!not-base64!!!", id="garbage-eks-token"),
    pytest.param(lambda: "some-other-token", id="unknown-token"),
])
def test_bad_tokens_get_401_with_status_body(harness, token):
    status, body, dummy = raw(harness, "GET", "/api/v1/nodes", token=token())
    assert status == 401
    assert body["kind"] == "Status" and body["reason"] == "Unauthorized" and body["code"] == 401
    with pytest.raises(ApiException) as raised:
        client.CoreV1Api(harness.api_client(token=token())).list_node()
    assert raised.value.status == 401


def test_eks_token_must_sign_the_cluster_header(harness):
    sts = boto3.session.Session(aws_access_key_id="AKID", aws_secret_access_key="s",
                                region_name="us-west-2").client("sts")
    url = sts.generate_presigned_url("get_caller_identity", Params={}, ExpiresIn=60, HttpMethod="GET")
    token = "k8s-aws-v1." + base64.urlsafe_b64encode(url.encode()).decode().rstrip("=")
    assert raw(harness, "GET", "/api/v1/nodes", token=token)[0] == 401


def test_anonymous_requests_are_refused_except_version(harness):
    assert raw(harness, "GET", "/api/v1/pods", token=False)[0] == 401
    assert raw(harness, "GET", "/version", token=False)[0] == 200


def test_tls_kubeconfig_carries_ca_and_token(tmp_path):
    import yaml
    from kubernetes import config
    with KubeHarness(str(tmp_path), scenario(cluster={"tls": True}), nodes=1) as tls_harness:
        assert tls_harness.sim.url.startswith("https://127.0.0.1:")
        kubeconfig = yaml.safe_load(open(tls_harness.kubeconfig))
        ca = base64.b64decode(kubeconfig["clusters"][0]["cluster"]["certificate-authority-data"]).decode()
        assert ca == tls_harness.sim.ca_pem and "BEGIN CERTIFICATE" in ca
        api_client = config.new_client_from_config(config_file=tls_harness.kubeconfig)
        tls_harness.wait_for(lambda: client.CoreV1Api(api_client).list_node().items)
        assert client.CoreV1Api(api_client).list_node().items[0].status.node_info.kubelet_version


# -- objects through the strict client models --

def test_objects_parse_with_strict_client_models(harness):
    harness.sim.api.create(PDBS, "default", {
        "metadata": {"name": "p"}, "spec": {"minAvailable": 1, "selector": {"matchLabels": {"app": "x"}}}})
    api_client = harness.api_client()
    nodes = client.CoreV1Api(api_client).list_node()
    assert nodes.metadata.resource_version and nodes.kind == "NodeList"
    node = nodes.items[0]
    info = node.status.node_info
    assert all([info.architecture, info.boot_id, info.container_runtime_version, info.kernel_version,
                info.kube_proxy_version, info.kubelet_version, info.machine_id, info.operating_system,
                info.os_image, info.system_uuid])
    assert node.metadata.uid and node.metadata.creation_timestamp and node.metadata.resource_version
    assert {c.type for c in node.status.conditions} == {"Ready", "MemoryPressure", "DiskPressure", "PIDPressure"}
    harness.wait_for(lambda: client.PolicyV1Api(api_client).read_namespaced_pod_disruption_budget(
        "p", "default").status.observed_generation == 1)
    assert client.CoreV1Api(api_client).read_namespace("default").status.phase == "Active"


# -- verbs --

def test_connections_send_without_delay_as_the_api_server_does(harness, monkeypatch):
    """Go's net package sets TCP_NODELAY on every connection (net.TCPConn.SetNoDelay: "The default is true"), so
    the API server never holds a response's body back for the client's delayed ACK; the sandbox's connections are
    the same (with Nagle's algorithm on, each response came about 40 ms late)."""
    seen = []
    setup = ApiRequestHandler.setup

    def recording_setup(handler):
        setup(handler)
        seen.append(handler.connection.getsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY))

    monkeypatch.setattr(ApiRequestHandler, "setup", recording_setup)
    client.CoreV1Api(harness.api_client()).list_node()
    assert seen and all(seen)


def test_create_get_delete_and_conflicts(harness, core):
    created = core.create_namespaced_pod("default", make_pod("a", node="nowhere"))
    assert created.metadata.uid and created.status.phase == "Pending"
    assert core.read_namespaced_pod("a", "default").metadata.uid == created.metadata.uid
    with pytest.raises(ApiException) as exists:
        core.create_namespaced_pod("default", make_pod("a"))
    assert exists.value.status == 409 and json.loads(exists.value.body)["reason"] == "AlreadyExists"
    with pytest.raises(ApiException) as wrong_uid:
        core.delete_namespaced_pod("a", "default", body=client.V1DeleteOptions(
            preconditions=client.V1Preconditions(uid="not-the-uid")))
    assert wrong_uid.value.status == 409
    core.delete_namespaced_pod("a", "default", grace_period_seconds=0)
    with pytest.raises(ApiException) as missing:
        core.read_namespaced_pod("a", "default")
    assert missing.value.status == 404 and json.loads(missing.value.body)["details"]["name"] == "a"
    with pytest.raises(ApiException) as no_namespace:
        core.create_namespaced_pod("nope", make_pod("b", namespace="nope"))
    assert no_namespace.value.status == 404


def test_generate_name_and_global_resource_version(harness, core):
    first = core.create_namespaced_pod("default", {**make_pod(""), "metadata": {"generateName": "gen-"}})
    second = core.create_namespaced_pod("default", {**make_pod(""), "metadata": {"generateName": "gen-"}})
    assert first.metadata.name.startswith("gen-") and first.metadata.name != second.metadata.name
    assert int(second.metadata.resource_version) > int(first.metadata.resource_version)


def test_update_with_stale_resource_version_is_409(harness, core):
    node_name = core.list_node().items[0].metadata.name
    status, node, dummy = raw(harness, "GET", f"/api/v1/nodes/{node_name}")
    node["metadata"]["labels"]["team"] = "a"
    status, updated, dummy = raw(harness, "PUT", f"/api/v1/nodes/{node_name}", node)
    assert status == 200 and updated["metadata"]["labels"]["team"] == "a"
    node["metadata"]["labels"]["team"] = "b"  # still carries the old resourceVersion
    status, body, dummy = raw(harness, "PUT", f"/api/v1/nodes/{node_name}", node)
    assert status == 409 and body["reason"] == "Conflict"


@pytest.mark.parametrize("content_type,patch", [
    ("application/strategic-merge-patch+json", {"spec": {"unschedulable": True}, "metadata": {"labels": {"x": "1"}}}),
    ("application/merge-patch+json", {"spec": {"unschedulable": True}, "metadata": {"labels": {"x": "1"}}}),
    ("application/json-patch+json", [{"op": "add", "path": "/spec/unschedulable", "value": True},
                                     {"op": "add", "path": "/metadata/labels/x", "value": "1"}]),
])
def test_patch_types_on_node(harness, core, content_type, patch):
    name = core.list_node().items[0].metadata.name
    status, patched, dummy = raw(harness, "PATCH", f"/api/v1/nodes/{name}", patch, content_type=content_type)
    assert status == 200
    assert patched["spec"]["unschedulable"] is True and patched["metadata"]["labels"]["x"] == "1"
    assert patched["metadata"]["labels"]["topology.kubernetes.io/region"] == "us-west-2"  # the rest is kept


def test_strategic_merge_patch_merges_conditions_by_type_and_patch_status(harness, core):
    core.create_namespaced_pod("default", make_pod("s", node="nowhere"))
    status, pod, dummy = raw(harness, "PATCH", "/api/v1/namespaces/default/pods/s/status",
                             {"status": {"conditions": [{"type": "Custom", "status": "True"}]}},
                             content_type="application/strategic-merge-patch+json")
    assert status == 200
    assert {c["type"] for c in pod["status"]["conditions"]} == {"PodScheduled", "Custom"}
    patch_with_stale_rv = {"metadata": {"resourceVersion": "1"}, "spec": {"activeDeadlineSeconds": 5}}
    assert raw(harness, "PATCH", "/api/v1/namespaces/default/pods/s", patch_with_stale_rv,
               content_type="application/merge-patch+json")[0] == 409
    assert raw(harness, "PATCH", "/api/v1/namespaces/default/pods/s", {"spec": {}},
               content_type="text/plain")[0] == 415


def test_delete_with_grace_period_marks_pod_terminating_then_removes_it(harness, core):
    node = core.list_node().items[0].metadata.name
    core.create_namespaced_pod("default", make_pod("g", node=node))
    harness.wait_for(lambda: core.read_namespaced_pod("g", "default").status.phase == "Running")
    deleted = core.delete_namespaced_pod("g", "default", grace_period_seconds=10)
    assert deleted.metadata.deletion_timestamp is not None and deleted.metadata.deletion_grace_period_seconds == 10
    assert core.read_namespaced_pod("g", "default").metadata.deletion_timestamp is not None
    harness.wait_for(lambda: not core.list_namespaced_pod("default", field_selector="metadata.name=g").items)


# -- list: selectors and paging --

@pytest.mark.parametrize("selector,expected", [
    ("app=web", {"w1", "w2"}), ("app==web", {"w1", "w2"}), ("app!=web", {"d1", "n1"}),
    ("app in (web,db)", {"w1", "w2", "d1"}), ("app notin (web)", {"d1", "n1"}), ("tier", {"w1", "d1"}),
    ("!tier", {"w2", "n1"}), ("app=web,tier=front", {"w1"}), ("app in (web), !tier", {"w2"}),
])
def test_label_selectors(harness, core, selector, expected):
    for name, labels in {"w1": {"app": "web", "tier": "front"}, "w2": {"app": "web"},
                         "d1": {"app": "db", "tier": "back"}, "n1": {}}.items():
        core.create_namespaced_pod("default", make_pod(name, labels, node="nowhere"))
    found = {p.metadata.name for p in core.list_namespaced_pod("default", label_selector=selector).items}
    assert found == expected


def test_bad_label_selector_is_400(harness):
    assert raw(harness, "GET", "/api/v1/pods?labelSelector=a%20in%20b")[0] == 400


def test_field_selectors(harness, core):
    nodes = [n.metadata.name for n in core.list_node().items]
    core.create_namespace({"metadata": {"name": "other"}})
    core.create_namespaced_pod("default", make_pod("on-0", node=nodes[0]))
    core.create_namespaced_pod("default", make_pod("on-1", node=nodes[1]))
    core.create_namespaced_pod("other", make_pod("other-0", node=nodes[0], namespace="other"))

    def names(**kw):
        return {p.metadata.name for p in core.list_pod_for_all_namespaces(**kw).items}

    assert names(field_selector=f"spec.nodeName={nodes[0]}") == {"on-0", "other-0"}
    assert names(field_selector=f"spec.nodeName=={nodes[0]},metadata.namespace=other") == {"other-0"}
    assert names(field_selector=f"spec.nodeName!={nodes[0]}") == {"on-1"}
    assert names(field_selector="metadata.name=on-1") == {"on-1"}
    harness.wait_for(lambda: names(field_selector="status.phase=Running") == {"on-0", "on-1", "other-0"})
    assert names(field_selector="status.phase!=Running") == set()
    status, body, dummy = raw(harness, "GET", "/api/v1/pods?fieldSelector=spec.hostname%3Dx")
    assert status == 400 and "field label not supported" in body["message"]


def test_paging_with_limit_and_continue_is_a_stable_snapshot(harness, core):
    for i in range(7):
        core.create_namespaced_pod("default", make_pod(f"p{i}", node="nowhere"))
    first = core.list_namespaced_pod("default", limit=3)
    assert [p.metadata.name for p in first.items] == ["p0", "p1", "p2"]
    assert first.metadata._continue and first.metadata.remaining_item_count == 4
    core.create_namespaced_pod("default", make_pod("p3a", node="nowhere"))  # after the snapshot: not seen
    core.delete_namespaced_pod("p5", "default")  # deleted after the snapshot: still listed in it
    second = core.list_namespaced_pod("default", limit=3, _continue=first.metadata._continue)
    assert [p.metadata.name for p in second.items] == ["p3", "p4", "p5"]
    assert second.metadata.resource_version == first.metadata.resource_version
    third = core.list_namespaced_pod("default", limit=3, _continue=second.metadata._continue)
    assert [p.metadata.name for p in third.items] == ["p6"] and not third.metadata._continue
    status, body, dummy = raw(harness, "GET", f"/api/v1/namespaces/default/pods?limit=3&continue="
                                              f"{first.metadata._continue}")
    assert status == 410 and body["reason"] == "Expired"  # a continue token is used once


def test_list_by_node_uses_the_node_index(harness, core):
    """P2: LIST pods with spec.nodeName must not scan every pod."""
    store = harness.sim.store
    node = core.list_node().items[0].metadata.name
    core.create_namespaced_pod("default", make_pod("indexed", node=node))
    scanned = []
    original = store.items
    store.items = lambda rt, namespace=None: scanned.append(rt.plural) or original(rt, namespace)
    try:
        found = core.list_pod_for_all_namespaces(field_selector=f"spec.nodeName={node}").items
    finally:
        store.items = original
    assert [p.metadata.name for p in found] == ["indexed"]
    assert "pods" not in scanned


# -- watch --

def test_watch_from_resource_version_sees_later_events_only(harness, core):
    core.create_namespaced_pod("default", make_pod("before", node="nowhere"))
    rv = core.list_namespaced_pod("default").metadata.resource_version
    core.create_namespaced_pod("default", make_pod("after", node="nowhere"))
    core.delete_namespaced_pod("before", "default", grace_period_seconds=0)
    seen = [(e["type"], e["object"].metadata.name) for e in watch.Watch().stream(
        core.list_namespaced_pod, "default", resource_version=rv, timeout_seconds=1)]
    assert seen == [("ADDED", "after"), ("DELETED", "before")]


def test_watch_without_resource_version_starts_with_current_state(harness, core):
    core.create_namespaced_pod("default", make_pod("existing", node="nowhere"))
    seen = [(e["type"], e["object"].metadata.name) for e in watch.Watch().stream(
        core.list_namespaced_pod, "default", timeout_seconds=1)]
    assert seen == [("ADDED", "existing")]


def test_watch_with_field_selector_turns_moves_into_added_and_deleted(harness, core):
    nodes = [n.metadata.name for n in core.list_node().items]
    rv = core.list_pod_for_all_namespaces().metadata.resource_version
    core.create_namespaced_pod("default", make_pod("mover", {"stage": "a"}, node=nodes[0]))
    raw(harness, "PATCH", "/api/v1/namespaces/default/pods/mover", {"metadata": {"labels": {"stage": "b"}}},
        content_type="application/merge-patch+json")
    events = [(e["type"], e["object"].metadata.labels["stage"]) for e in watch.Watch().stream(
        core.list_pod_for_all_namespaces, label_selector="stage=a", resource_version=rv, timeout_seconds=1)]
    assert events[0] == ("ADDED", "a") and ("DELETED", "b") in events


def test_watch_bookmarks_carry_the_current_resource_version(harness, core):
    rv = core.list_namespaced_pod("default").metadata.resource_version
    events = list(watch.Watch().stream(core.list_namespaced_pod, "default", resource_version=rv,
                                       allow_watch_bookmarks=True, timeout_seconds=2))
    bookmarks = [e for e in events if e["type"] == "BOOKMARK"]
    assert bookmarks, events
    assert int(bookmarks[-1]["raw_object"]["metadata"]["resourceVersion"]) >= int(rv)


def test_watch_timeout_ends_the_stream(harness, core):
    started = time.monotonic()
    assert list(watch.Watch().stream(core.list_namespaced_pod, "kube-system", timeout_seconds=1)) == []
    assert 0.9 <= time.monotonic() - started < 3


def test_watch_from_a_compacted_resource_version_is_410(tmp_path):
    with KubeHarness(str(tmp_path), tick=False) as small:
        from eks_sandbox.kube.store import EventLog
        small.sim.store._logs["pods"] = EventLog(small.sim.store.lock, retain=5)
        core = client.CoreV1Api(small.api_client())
        rv = core.list_namespaced_pod("default").metadata.resource_version
        for i in range(12):
            core.create_namespaced_pod("default", make_pod(f"c{i}", node="nowhere"))
        status, body, dummy = raw(small, "GET", f"/api/v1/namespaces/default/pods?watch=true&resourceVersion={rv}")
        assert status == 410 and body["reason"] == "Expired" and body["code"] == 410
        with pytest.raises(ApiException) as gone:
            list(watch.Watch().stream(core.list_namespaced_pod, "default", resource_version=rv, timeout_seconds=1))
        assert gone.value.status == 410


def test_watch_streams_live_events(harness, core):
    rv = core.list_namespaced_pod("default").metadata.resource_version
    seen = []

    def consume():
        for event in watch.Watch().stream(core.list_namespaced_pod, "default", resource_version=rv,
                                          timeout_seconds=3):
            seen.append((event["type"], event["object"].metadata.name))
            if event["type"] == "DELETED":
                return
    reader = threading.Thread(target=consume)
    reader.start()
    time.sleep(0.2)
    core.create_namespaced_pod("default", make_pod("live", node="nowhere"))
    core.delete_namespaced_pod("live", "default", grace_period_seconds=0)
    reader.join(5)
    assert seen == [("ADDED", "live"), ("DELETED", "live")]


# -- faults and request records --

def test_injected_k8s_error_with_retry_after(tmp_path):
    faults = [{"type": "k8s_error", "verb": "create", "resource": "pods/eviction", "status": 429,
               "retry_after": 3, "count": 1}]
    with KubeHarness(str(tmp_path), faults=faults) as faulty:
        status, body, headers = raw(faulty, "POST", "/api/v1/namespaces/default/pods/x/eviction",
                                    {"apiVersion": "policy/v1", "kind": "Eviction", "metadata": {"name": "x"}})
        assert status == 429 and headers["Retry-After"] == "3" and body["kind"] == "Status"
        status, dummy, dummy = raw(faulty, "POST", "/api/v1/namespaces/default/pods/x/eviction",
                                   {"apiVersion": "policy/v1", "kind": "Eviction", "metadata": {"name": "x"}})
        assert status == 404  # count: 1 -> the second request is served


def test_watch_faults_gone_and_drop(tmp_path):
    faults = [{"type": "watch_gone", "count": 1}, {"type": "watch_drop", "every_seconds": 0.5}]
    with KubeHarness(str(tmp_path), faults=faults) as faulty:
        core = client.CoreV1Api(faulty.api_client())
        with pytest.raises(ApiException) as gone:
            list(watch.Watch().stream(core.list_namespaced_pod, "default", timeout_seconds=5))
        assert gone.value.status == 410
        started = time.monotonic()
        list(watch.Watch().stream(core.list_namespaced_pod, "default", timeout_seconds=5))
        assert time.monotonic() - started < 3


def test_every_request_is_recorded_with_user_agent_verb_resource_status(harness):
    raw(harness, "GET", "/api/v1/nodes", headers={"User-Agent": "probe/1"})
    raw(harness, "GET", "/api/v1/namespaces/default/pods/missing", headers={"User-Agent": "probe/1"})
    raw(harness, "PATCH", "/api/v1/nodes/none", {"spec": {}}, content_type="application/merge-patch+json",
        headers={"User-Agent": "probe/1"})
    raw(harness, "GET", "/api/v1/nodes", token="bad", headers={"User-Agent": "probe/1"})
    counts = harness.recorder.k8s_requests()
    assert counts["probe/1 list nodes 200"] == 1
    assert counts["probe/1 get pods 404"] == 1
    assert counts["probe/1 patch nodes 404"] == 1
    assert counts["probe/1 list nodes 401"] == 1
