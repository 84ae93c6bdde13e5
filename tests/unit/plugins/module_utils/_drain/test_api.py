# -*- coding: utf-8 -*-
# Copyright: Contributors to the eksops.nodegroup project
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""The drain's Kubernetes calls (_drain/api.py): unknown nodes, events (best effort), a token asked for on every
request (P5), and eviction responses read before their connection is reused (D11)."""

from __future__ import annotations

import json
import socketserver
import threading
import time

import pytest

from ansible_collections.eksops.nodegroup.plugins.module_utils._drain import api as drain_api
from ansible_collections.eksops.nodegroup.plugins.module_utils._drain.cordon import cordon_nodes
from ansible_collections.eksops.nodegroup.plugins.module_utils.errors import UpgradeError
from ansible_collections.eksops.nodegroup.plugins.module_utils.kube.client import bearer_api_key

from ...fakes import FakeCluster, FakeResponse, api_error, make_pod, node, run_drain


def test_unknown_node_names_the_parameter():
    with pytest.raises(UpgradeError) as info:
        run_drain(FakeCluster(), names=("nope",))
    assert info.value.code == "ResourceNotFound" and "nope" in info.value.msg


# ----------------------------------------------------------------------------------------------------------
# Events
# ----------------------------------------------------------------------------------------------------------

def test_events_never_fail_the_drain():
    cluster = FakeCluster([make_pod("web-0")])

    def broken(namespace, body, _preload_content=True):
        raise api_error(403)
    cluster.create_namespaced_event = broken
    assert run_drain(cluster).error() is None


def test_events_describe_the_node():
    cluster = FakeCluster([make_pod("web-0")])
    run_drain(cluster)
    namespace, event = cluster.events[0]
    assert namespace == "default" and event.involved_object.kind == "Node"
    assert event.involved_object.uid == "uid-node-a" and event.source.component == "eksops-nodegroup"


# ----------------------------------------------------------------------------------------------------------
# The HTTP client underneath (P5, D11)
# ----------------------------------------------------------------------------------------------------------

def test_P5_every_request_asks_the_client_configuration_for_its_token():
    """Long drains survive token expiry: nothing caches the Authorization header, so the client's
    refresh_api_key_hook (EKS token refresher) runs before every request."""
    from kubernetes.client import ApiClient, Configuration, CoreV1Api

    tokens = iter("token-%d" % i for i in range(100))
    configuration = Configuration(host="https://eks.invalid")
    configuration.api_key = bearer_api_key("token-initial")

    def refresh(config):
        config.api_key.update(bearer_api_key(next(tokens)))
    configuration.refresh_api_key_hook = refresh
    seen = []

    class RecordingClient(ApiClient):
        """An ApiClient whose request, the method every API class's request reaches once its headers are built,
        records the headers the client built for the request and answers it."""

        def request(self, method, url, query_params=None, headers=None, post_params=None, body=None,
                    _preload_content=True, _request_timeout=None):
            seen.append((method, headers.get("authorization")))
            return FakeResponse(node() if "/nodes/" in url else {})
    client = RecordingClient(configuration)
    result = cordon_nodes(CoreV1Api(client), ["node-a"], run_id="run-1")
    assert result.changed and result.requests_made == 3
    assert [auth for _method, auth in seen] == ["Bearer token-0", "Bearer token-1", "Bearer token-2"]


class _BodyAfterHeadersHandler(socketserver.StreamRequestHandler):
    """Keep-alive HTTP/1.1 that answers every request 201 and sends the body a moment after the headers (as
    the sandbox's API server can): a client that hands the connection back unread reuses it too early."""

    def handle(self):
        while True:
            request_line = self.rfile.readline()
            if not request_line:
                return
            length = 0
            for line in iter(self.rfile.readline, b"\r\n"):
                name, _sep, value = line.decode("latin-1").partition(":")
                if name.strip().lower() == "content-length":
                    length = int(value)
            self.rfile.read(length)
            self.server.requests.append(request_line.split()[1].decode())
            body = json.dumps({"kind": "Status", "apiVersion": "v1", "status": "Success", "code": 201}).encode()
            self.wfile.write(b"HTTP/1.1 201 Created\r\nContent-Type: application/json\r\n"
                             b"Content-Length: %d\r\n\r\n" % len(body))
            self.wfile.flush()
            time.sleep(0.1)
            self.wfile.write(body)
            self.wfile.flush()


@pytest.fixture()
def slow_body_server():
    server = socketserver.ThreadingTCPServer(("127.0.0.1", 0), _BodyAfterHeadersHandler)
    server.daemon_threads = True
    server.requests = []
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    yield server
    server.shutdown()
    server.server_close()


def test_D11_eviction_responses_are_read_before_their_connection_is_reused(slow_body_server):
    """An accepted eviction's response is read to the end before its connection is reused: otherwise the next
    eviction on it reads the leftover body as its status line, fails on our side although the server evicted
    the pod, and is sent again (a 404 that files an evicted pod as merely gone)."""
    from kubernetes.client import ApiClient, Configuration, CoreV1Api

    configuration = Configuration(host="http://127.0.0.1:%d" % slow_body_server.server_address[1])
    configuration.connection_pool_maxsize = 1
    api = drain_api.KubeApi(CoreV1Api(ApiClient(configuration)))
    pods = [make_pod("web-%d" % i) for i in range(3)]
    for pod in pods:
        api.remove_pod(pod, "evict", -1)
    assert slow_body_server.requests == ["/api/v1/namespaces/default/pods/web-%d/eviction" % i for i in range(3)]
    assert api.requests_made == 3
