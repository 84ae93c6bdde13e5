# -*- coding: utf-8 -*-
# Copyright: Contributors to the eksops.nodegroup project
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Issue 10 item 17: the Table (meta.k8s.io/v1) the simulated API server answers `Accept: ...;as=Table` with,
checked on the wire with the kubernetes python client and requests, and the cells of the print functions for
states the sandbox's controllers never produce. The expectations are the real API server's:
kubernetes/kubernetes pkg/printers/internalversion/printers.go (columns and cells),
staging/src/k8s.io/apiserver/pkg/endpoints/handlers/response.go (includeObject, watch) and
staging/src/k8s.io/apiserver/pkg/registry/rest/table.go (the default table)."""

from __future__ import annotations

import json
import time
from types import SimpleNamespace

import pytest
import requests
from kubernetes import client

from eks_sandbox.kube import tables
from eks_sandbox.kube.resources import NODES, ResourceType
from eks_sandbox.kube.testing import KubeHarness, scenario
from eks_sandbox.kube.timefmt import rfc3339

TABLE = "application/json;as=Table;v=v1;g=meta.k8s.io"
KUBECTL_ACCEPT = f"{TABLE},application/json;as=Table;v=v1beta1;g=meta.k8s.io,application/json"

# (name, type, priority) of each resource's columns, as printers.go AddHandlers defines them.
UPSTREAM_COLUMNS = {
    "pods": [("Name", "string", 0), ("Ready", "string", 0), ("Status", "string", 0), ("Restarts", "string", 0),
             ("Age", "string", 0), ("IP", "string", 1), ("Node", "string", 1), ("Nominated Node", "string", 1),
             ("Readiness Gates", "string", 1)],
    "nodes": [("Name", "string", 0), ("Status", "string", 0), ("Roles", "string", 0), ("Age", "string", 0),
              ("Version", "string", 0), ("Internal-IP", "string", 1), ("External-IP", "string", 1),
              ("OS-Image", "string", 1), ("Kernel-Version", "string", 1), ("Container-Runtime", "string", 1)],
    "events": [("Last Seen", "string", 0), ("Type", "string", 0), ("Reason", "string", 0), ("Object", "string", 0),
               ("Subobject", "string", 1), ("Source", "string", 1), ("Message", "string", 0),
               ("First Seen", "string", 1), ("Count", "string", 1), ("Name", "string", 1)],
    "poddisruptionbudgets": [("Name", "string", 0), ("Min Available", "string", 0),
                             ("Max Unavailable", "string", 0), ("Allowed Disruptions", "integer", 0),
                             ("Age", "string", 0)],
    "deployments": [("Name", "string", 0), ("Ready", "string", 0), ("Up-to-date", "string", 0),
                    ("Available", "string", 0), ("Age", "string", 0), ("Containers", "string", 1),
                    ("Images", "string", 1), ("Selector", "string", 1)],
    "replicasets": [("Name", "string", 0), ("Desired", "integer", 0), ("Current", "integer", 0),
                    ("Ready", "integer", 0), ("Age", "string", 0), ("Containers", "string", 1),
                    ("Images", "string", 1), ("Selector", "string", 1)],
    "daemonsets": [("Name", "string", 0), ("Desired", "integer", 0), ("Current", "integer", 0),
                   ("Ready", "integer", 0), ("Up-to-date", "integer", 0), ("Available", "integer", 0),
                   ("Node Selector", "string", 0), ("Age", "string", 0), ("Containers", "string", 1),
                   ("Images", "string", 1), ("Selector", "string", 1)],
    "namespaces": [("Name", "string", 0), ("Status", "string", 0), ("Age", "string", 0)],
}
PATHS = {"pods": "/api/v1/pods", "nodes": "/api/v1/nodes", "events": "/api/v1/events",
         "poddisruptionbudgets": "/apis/policy/v1/poddisruptionbudgets", "deployments": "/apis/apps/v1/deployments",
         "replicasets": "/apis/apps/v1/replicasets", "daemonsets": "/apis/apps/v1/daemonsets",
         "namespaces": "/api/v1/namespaces"}


@pytest.fixture(scope="module")
def cluster(tmp_path_factory):
    sc = scenario(workloads=[{"kind": "Deployment", "name": "web", "replicas": 3, "pdb": {"min_available": 2}},
                             {"kind": "DaemonSet", "name": "agent"}])
    with KubeHarness(str(tmp_path_factory.mktemp("tables")), sc, nodes=2) as running:
        running.core = client.CoreV1Api(running.api_client())
        running.wait_for(lambda: len([p for p in running.core.list_namespaced_pod("default").items
                                      if p.status.phase == "Running"]) == 5, what="5 pods running")
        running.core.create_namespaced_event("default", {
            "metadata": {"name": "web.started"}, "involvedObject": {"kind": "Deployment", "name": "web"},
            "reason": "ScalingReplicaSet", "message": "Scaled up", "type": "Normal", "count": 2,
            "firstTimestamp": rfc3339(), "lastTimestamp": rfc3339(), "source": {"component": "deployment-controller"}})
        yield running


def get(cluster, path, accept=TABLE, **params):
    headers = {"Authorization": f"Bearer {cluster.sim.admin_token}"}
    if accept is not None:
        headers["Accept"] = accept
    return requests.get(cluster.sim.url + path, headers=headers, params=params, timeout=10)


def test_python_client_gets_the_pod_table_with_the_node_of_each_pod(cluster):
    # The generated client's own request, with kubectl's Accept header as the ApiClient's default header (which
    # kubernetes 36's ApiClient lays over the generated one).
    api_client = cluster.api_client()
    api_client.set_default_header("Accept", TABLE)
    response = client.CoreV1Api(api_client).list_namespaced_pod("default", _preload_content=False)
    table = json.loads(response.data)
    assert (table["kind"], table["apiVersion"]) == ("Table", "meta.k8s.io/v1")
    assert [(c["name"], c["type"], c["priority"]) for c in table["columnDefinitions"]] == UPSTREAM_COLUMNS["pods"]
    assert table["columnDefinitions"][0]["format"] == "name"
    assert table["metadata"]["resourceVersion"].isdigit()
    pods = {p.metadata.name: p for p in cluster.core.list_namespaced_pod("default").items}
    assert sorted(row["cells"][0] for row in table["rows"]) == sorted(pods)
    for row in table["rows"]:
        pod = pods[row["cells"][0]]
        assert row["cells"][1:4] == ["1/1", "Running", "0"]
        assert row["cells"][5:] == [pod.status.pod_ip, pod.spec.node_name, "<none>", "<none>"]
        # includeObject defaults to Metadata: a PartialObjectMetadata in the Table's own group version
        assert row["object"]["kind"] == "PartialObjectMetadata"
        assert row["object"]["apiVersion"] == "meta.k8s.io/v1"
        assert row["object"]["metadata"]["uid"] == pod.metadata.uid
        assert set(row["object"]) == {"kind", "apiVersion", "metadata"}


@pytest.mark.parametrize("resource", sorted(UPSTREAM_COLUMNS))
def test_each_resource_answers_with_its_printers_columns_and_full_rows(cluster, resource):
    response = get(cluster, PATHS[resource], KUBECTL_ACCEPT)
    assert response.status_code == 200, response.text
    table = response.json()
    assert [(c["name"], c["type"], c["priority"]) for c in table["columnDefinitions"]] == UPSTREAM_COLUMNS[resource]
    assert all(c["description"] for c in table["columnDefinitions"])
    assert table["rows"], resource
    assert all(len(row["cells"]) == len(UPSTREAM_COLUMNS[resource]) for row in table["rows"])


def test_cells_of_the_workload_objects(cluster):
    pdb = get(cluster, "/apis/policy/v1/namespaces/default/poddisruptionbudgets/web").json()
    assert pdb["rows"][0]["cells"][:4] == ["web", "2", "N/A", 1]
    deployment = get(cluster, "/apis/apps/v1/namespaces/default/deployments/web").json()
    assert deployment["rows"][0]["cells"][:4] == ["web", "3/3", 3, 3]
    assert deployment["rows"][0]["cells"][5:] == ["app", "public.ecr.aws/nginx/nginx:1.27", "app=web"]
    daemonset = get(cluster, "/apis/apps/v1/namespaces/default/daemonsets/agent").json()
    assert daemonset["rows"][0]["cells"][:7] == ["agent", 2, 2, 2, 2, 2, "<none>"]
    event = get(cluster, "/api/v1/namespaces/default/events/web.started").json()
    cells = event["rows"][0]["cells"]
    assert cells[1:8] == ["Normal", "ScalingReplicaSet", "deployment/web", "", "deployment-controller", "Scaled up",
                          cells[0]]
    assert cells[8:] == [2, "web.started"]


def test_one_object_and_a_paged_list_carry_their_list_metadata(cluster):
    node = cluster.core.list_node().items[0]
    one = get(cluster, f"/api/v1/nodes/{node.metadata.name}").json()
    assert one["metadata"] == {"resourceVersion": node.metadata.resource_version}
    assert [row["cells"][0] for row in one["rows"]] == [node.metadata.name]
    first = get(cluster, "/api/v1/nodes", limit="1").json()
    assert first["metadata"]["remainingItemCount"] == 1 and first["metadata"]["continue"]
    second = get(cluster, "/api/v1/nodes", limit="1", **{"continue": first["metadata"]["continue"]}).json()
    assert "continue" not in second["metadata"]
    assert len({first["rows"][0]["cells"][0], second["rows"][0]["cells"][0]}) == 2


@pytest.mark.parametrize("accept", [None, "application/json", "*/*",
                                    "application/json;as=PartialObjectMetadataList;g=meta.k8s.io;v=v1,"
                                    "application/json",
                                    "application/json;as=Table;v=v1alpha1;g=meta.k8s.io,application/json",
                                    "application/json, application/json;as=Table;v=v1;g=meta.k8s.io"])
def test_a_request_not_preferring_a_table_gets_the_objects_as_before(cluster, accept):
    response = get(cluster, "/api/v1/namespaces/default/pods", accept)
    assert response.status_code == 200
    assert response.json()["kind"] == "PodList" and response.json()["items"][0]["kind"] == "Pod"


def test_accept_preferences_and_table_versions(cluster):
    preferred = get(cluster, "/api/v1/nodes", f"application/json;q=0.5, {TABLE}")
    assert preferred.json()["kind"] == "Table"
    beta = get(cluster, "/api/v1/nodes", "application/json;as=Table;v=v1beta1;g=meta.k8s.io").json()
    assert beta["apiVersion"] == "meta.k8s.io/v1beta1"
    assert beta["rows"][0]["object"]["apiVersion"] == "meta.k8s.io/v1beta1"
    refused = get(cluster, "/api/v1/nodes", "application/json;as=Table;v=v1alpha1;g=meta.k8s.io")
    assert refused.status_code == 406
    assert (refused.json()["kind"], refused.json()["reason"]) == ("Status", "NotAcceptable")


def test_include_object_policies(cluster):
    whole = get(cluster, "/api/v1/namespaces/default/pods", includeObject="Object").json()
    assert {(row["object"]["apiVersion"], row["object"]["kind"]) for row in whole["rows"]} == {("v1", "Pod")}
    assert all(row["object"]["spec"]["nodeName"] == row["cells"][6] for row in whole["rows"])
    none = get(cluster, "/api/v1/namespaces/default/pods", includeObject="None").json()
    assert {row["object"] is None for row in none["rows"]} == {True}
    metadata = get(cluster, "/api/v1/namespaces/default/pods", includeObject="Metadata").json()
    assert {row["object"]["kind"] for row in metadata["rows"]} == {"PartialObjectMetadata"}
    bad = get(cluster, "/api/v1/namespaces/default/pods", includeObject="Everything")
    assert bad.status_code == 400
    assert bad.json()["message"].startswith("Unable to convert to Table as requested: includeObject: Invalid value")


def test_watch_as_table_sends_column_definitions_with_the_first_event_only(cluster):
    with requests.get(cluster.sim.url + "/api/v1/namespaces/default/pods",
                      params={"watch": "1", "timeoutSeconds": "1", "labelSelector": "app=web"}, stream=True,
                      headers={"Authorization": f"Bearer {cluster.sim.admin_token}", "Accept": TABLE},
                      timeout=10) as response:
        events = [json.loads(line) for line in response.iter_lines() if line]
    assert [event["type"] for event in events] == ["ADDED"] * 3
    assert [event["object"]["kind"] for event in events] == ["Table"] * 3
    assert [len(event["object"]["columnDefinitions"] or []) for event in events] == [9, 0, 0]
    assert [event["object"]["columnDefinitions"] for event in events[1:]] == [None, None]
    assert all(len(event["object"]["rows"]) == 1 and len(event["object"]["rows"][0]["cells"]) == 9
               for event in events)


# -- the print functions on their own, for states the controllers do not produce --

# A whole second, frozen: ages printed from wall-clock time flaked when a fractional timestamp straddled a second.
NOW = 1_700_000_000.0


@pytest.fixture
def frozen_clock(monkeypatch):
    monkeypatch.setattr(tables, "time", SimpleNamespace(time=lambda: NOW, strftime=time.strftime, gmtime=time.gmtime))


def ago(seconds):
    return rfc3339(NOW - seconds)


def pod(status=None, spec=None, **meta):
    return {"metadata": {"name": "p", "creationTimestamp": ago(30), **meta},
            "spec": {"containers": [{"name": "app", "image": "i"}], "nodeName": "n1", **(spec or {})},
            "status": status or {}}


@pytest.mark.parametrize("seconds, printed", [
    (-5, "<invalid>"), (-0.5, "0s"), (0, "0s"), (119, "119s"), (120, "2m"), (125, "2m5s"), (599, "9m59s"),
    (600, "10m"), (3 * 3600 - 1, "179m"), (3 * 3600, "3h"), (3 * 3600 + 60, "3h1m"), (8 * 3600, "8h"),
    (47 * 3600, "47h"), (48 * 3600, "2d"), (49 * 3600, "2d1h"), (8 * 86400, "8d"), (800 * 86400, "2y70d"),
    (365 * 86400 * 2, "2y"), (365 * 86400 * 9, "9y")])
def test_human_duration_is_the_api_servers(seconds, printed):
    assert tables.human_duration(seconds) == printed


def test_pod_cells_for_waiting_terminated_and_restarted_containers(frozen_clock):
    crash = pod({"phase": "Running", "containerStatuses": [{
        "name": "app", "ready": False, "restartCount": 3, "state": {"waiting": {"reason": "CrashLoopBackOff"}},
        "lastState": {"terminated": {"exitCode": 1, "finishedAt": ago(150)}}}]})
    assert tables.pod_row(crash)["cells"][1:4] == ["0/1", "CrashLoopBackOff", "3 (2m30s ago)"]
    terminated = {"name": "app", "restartCount": 0, "state": {"terminated": {"exitCode": 137}}}
    killed = pod({"phase": "Running", "containerStatuses": [terminated]})
    assert tables.pod_row(killed)["cells"][2] == "ExitCode:137"
    done = pod({"phase": "Succeeded", "containerStatuses": [{"name": "app", "state": {"terminated": {
        "exitCode": 0, "reason": "Completed"}}}]})
    row = tables.pod_row(done)
    assert row["cells"][2] == "Completed" and row["conditions"][0]["reason"] == "Succeeded"
    pending = pod({"phase": "Pending"}, spec={"nodeName": None})
    assert tables.pod_row(pending)["cells"][1:] == ["0/1", "Pending", "0", "30s", "<none>", "<none>", "<none>",
                                                    "<none>"]


def test_pod_cells_for_init_containers_gates_deletion_and_lost_nodes(frozen_clock):
    init = {"initContainers": [{"name": "setup"}, {"name": "proxy", "restartPolicy": "Always"}]}
    waiting = pod({"phase": "Pending", "initContainerStatuses": [
        {"name": "setup", "restartCount": 0, "state": {"waiting": {"reason": "PodInitializing"}}}]}, init)
    assert tables.pod_row(waiting)["cells"][1:3] == ["0/2", "Init:0/2"]
    failing = pod({"phase": "Pending", "initContainerStatuses": [
        {"name": "setup", "restartCount": 2, "state": {"waiting": {"reason": "CrashLoopBackOff"}}}]}, init)
    assert tables.pod_row(failing)["cells"][2:4] == ["Init:CrashLoopBackOff", "2"]
    gated = pod({"phase": "Running", "conditions": [{"type": "Ready", "status": "True"},
                                                    {"type": "example.com/lb", "status": "False"}]},
                {"readinessGates": [{"conditionType": "Ready"}, {"conditionType": "example.com/lb"}]})
    assert tables.pod_row(gated)["cells"][8] == "1/2"
    deleting = pod({"phase": "Running"}, deletionTimestamp=ago(1))
    assert tables.pod_row(deleting)["cells"][2] == "Terminating"
    lost = pod({"phase": "Running", "reason": "NodeLost"}, deletionTimestamp=ago(1))
    assert tables.pod_row(lost)["cells"][2] == "Unknown"
    scheduling_gated = pod({"phase": "Pending", "conditions": [{"type": "PodScheduled", "status": "False",
                                                                "reason": "SchedulingGated"}]})
    assert tables.pod_row(scheduling_gated)["cells"][2] == "SchedulingGated"


def test_node_event_and_pdb_cells(frozen_clock):
    labels = {"node-role.kubernetes.io/worker": "", "kubernetes.io/role": "edge", "node-role.kubernetes.io/": ""}
    node = {"metadata": {"name": "n", "labels": labels},
            "spec": {"unschedulable": True}, "status": {"conditions": [{"type": "Ready", "status": "Unknown"}]}}
    assert tables.node_row(node)["cells"][1:3] == ["NotReady,SchedulingDisabled", "edge,worker"]
    assert tables.node_row({"metadata": {"name": "n"}})["cells"][1:] == [
        "Unknown", "<none>", "<unknown>", "", "<none>", "<none>", "<unknown>", "<unknown>", "<unknown>"]
    # A MicroTime 300.877 s ago: "5m" (HumanDuration floors), where an unparsed fraction would print "5m1s".
    series = {"metadata": {"name": "e"}, "involvedObject": {"kind": "Pod", "name": "p", "fieldPath": "spec.x"},
              "eventTime": ago(301).replace("Z", ".123456Z"), "series": {"count": 7, "lastObservedTime": ago(5)},
              "reportingComponent": "kubelet", "reportingInstance": "n1", "message": "  backoff \n"}
    assert tables.event_row(series)["cells"] == ["5s", "", "", "pod/p", "spec.x", "kubelet, n1", "backoff", "5m",
                                                 7, "e"]
    bare = {"metadata": {"name": "e"}, "involvedObject": {"kind": "Node"}, "firstTimestamp": ago(10)}
    cells = tables.event_row(bare)["cells"]
    assert cells[0:4] + cells[7:9] == ["10s", "", "", "node", "10s", 1]
    pdb = {"metadata": {"name": "b"}, "spec": {"maxUnavailable": "50%"}, "status": {"disruptionsAllowed": 0}}
    assert tables.pdb_row(pdb)["cells"][:4] == ["b", "N/A", "50%", 0]


def test_selectors_print_as_labels_selector_string():
    selector = {"matchLabels": {"b": "2", "a": "1"},
                "matchExpressions": [{"key": "c", "operator": "NotIn", "values": ["y", "x"]},
                                     {"key": "0", "operator": "Exists"}, {"key": "d", "operator": "DoesNotExist"}]}
    assert tables.selector_string(selector) == "0,a=1,b=2,c notin (x,y),!d"
    assert tables.selector_string({}) == "" and tables.format_label_selector({}) == "<none>"
    assert tables.format_label_selector({"matchExpressions": [{"key": "a", "operator": "Like"}]}) == "<error>"
    assert tables.format_labels({"b": "2", "a": "1"}) == "a=1,b=2" and tables.format_labels(None) == "<none>"


def test_a_type_without_printers_gets_the_default_table():
    """rest/table.go defaultTableConvertor: Name and "Created At" (a date, RFC 3339), rows null when empty."""
    widgets = ResourceType("widgets", "widget", "Widget", "example.com", "v1", True)
    listed = {"kind": "WidgetList", "apiVersion": "example.com/v1", "metadata": {"resourceVersion": "7"},
              "items": [{"kind": "Widget", "metadata": {"name": "w", "creationTimestamp": "2024-01-02T03:04:05Z"}}]}
    table = tables.TableRequest().convert(widgets, listed)
    assert [(c["name"], c["type"]) for c in table["columnDefinitions"]] == [("Name", "string"), ("Created At", "date")]
    assert table["rows"][0]["cells"] == ["w", "2024-01-02T03:04:05Z"]
    assert tables.TableRequest().convert(widgets, {**listed, "items": []})["rows"] is None
    status = {"kind": "Status", "status": "Failure"}
    assert tables.TableRequest().convert(NODES, status) is status
