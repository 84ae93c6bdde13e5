# -*- coding: utf-8 -*-
# Copyright: Contributors to the eksops.nodegroup project
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""The unit tests' fakes, in one place. Tests import them (``from ..fakes import FakeCluster``); the benchmarks,
which put tests/unit/plugins on sys.path, ``import fakes``. Fixtures that use fakes are in conftest.py.

- A fake Kubernetes API server: ``api_error``, ``FakeResponse``, ``FakeStore`` (a collection with
  resourceVersions, paging, selectors, watch history and injected faults) and its watch streams;
  ``FakeCoreV1``, the one fake CoreV1Api: nodes (LIST, GET, merge PATCH) in a FakeStore; ``FakeCluster``, the
  same core API plus pods, scripted evictions, events, and PolicyV1 + AppsV1 (PDBs that spend their budget,
  DaemonSets) reached through ``FakeApiClient``, a real kubernetes ApiClient that sends its requests to the fake.
  ``NodeListing`` is FakeCluster's old name (FakeCluster lists nodes now), kept for the modules' tests.
  ``FakeApiServer``: a FakeCoreV1 behind a real HTTP server, for code that builds its own client.
- Objects: ``make_pod``, ``node``, ``ec2_node``; the PDB refusal ``PDB_STATUS`` / ``pdb_refusal``.
- ``run_drain``: drain_nodes with the test defaults (run-1, no post_drain_wait, drain_timeout=5, PDB refusals
  retried every FAST_PDB_RETRY_SECONDS through drain_nodes' own ``pdb_retry_seconds``).
- ``FakeClock``: the one fake clock. It is kube_watch's Clock (``now()``, ``sleep()``), the time module as
  asg_ops and termination use it (``time()``, ``sleep()``), and a time function (``clock()``, for
  k8s.EksTokenRefresher); ``advance()`` moves it without a sleep."""

from __future__ import annotations

import datetime
import http.server
import json
import re
import threading
import time
from urllib.parse import parse_qsl, unquote, urlsplit

from kubernetes.client import ApiClient, Configuration
from kubernetes.client.exceptions import ApiException

from ansible_collections.eksops.nodegroup.plugins.module_utils._drain.cordon import apply_merge_patch
from ansible_collections.eksops.nodegroup.plugins.module_utils.drain import drain_nodes
from ansible_collections.eksops.nodegroup.plugins.module_utils.nodegroup.journal import Journal
from ansible_collections.eksops.nodegroup.plugins.module_utils.kube.label_selector import selector_matches


# ----------------------------------------------------------------------------------------------------------
# The API server: responses, errors, collections with watch history
# ----------------------------------------------------------------------------------------------------------

def api_error(status, body=None, retry_after=None):
    exc = ApiException(status=status, reason="error %d" % status)
    exc.headers = {"Retry-After": str(retry_after)} if retry_after is not None else {}
    exc.body = json.dumps(body if body is not None else {"kind": "Status", "code": status, "message": "boom"})
    return exc


class FakeResponse:
    """A ``_preload_content=False`` response whose ``data`` is ``payload`` as JSON. With ``must_be_read``,
    releasing its connection before the body was read fails the test (a connection handed back unread is reused
    too early)."""

    def __init__(self, payload, must_be_read=False):
        self._data = json.dumps(payload).encode()
        self.must_be_read = must_be_read
        self.was_read = False
        self.released = False

    @property
    def data(self):
        self.was_read = True
        return self._data

    def release_conn(self):
        assert self.was_read or not self.must_be_read, "connection released with the response body unread"
        self.released = True


class FakeWatchResponse:
    """A streaming watch: yields the store's events after `since`, until closed, timed out or shut down."""

    def __init__(self, store, since, matches, timeout_seconds, prelude=()):
        self.store = store
        self.cursor = since
        self.matches = matches
        self.ends_at = time.monotonic() + (timeout_seconds or 3600)
        self.prelude = list(prelude)
        self.closed = False
        self.shut_down = False  # shutdown() was called: the stream was ended mid-read, not by its timeout

    def stream(self, amt=None, decode_content=True):
        for event in self.prelude:
            yield (json.dumps(event) + "\n").encode()
        while True:
            with self.store.cond:
                while True:
                    if self.closed or self.store.drop_streams or time.monotonic() >= self.ends_at:
                        return
                    pending = [e for e in self.store.history if e[0] > self.cursor and self.matches(e[2])]
                    if pending:
                        break
                    self.store.cond.wait(0.02)
            for version, event_type, obj in pending:
                self.cursor = version
                yield (json.dumps({"type": event_type, "object": obj}) + "\n").encode()

    def shutdown(self):
        with self.store.cond:
            self.closed = True
            self.shut_down = True
            self.store.cond.notify_all()

    def close(self):
        self.closed = True

    def release_conn(self):
        pass


def _field_matcher(field_selector):
    if not field_selector:
        return lambda obj: True
    field, dummy, value = field_selector.partition("=")
    assert field == "spec.nodeName", field_selector
    return lambda obj: (obj.get("spec") or {}).get("nodeName") == value


def _label_matcher(label_selector):
    if not label_selector:
        return lambda obj: True
    pairs = [term.split("=", 1) for term in label_selector.split(",")]
    return lambda obj: all(((obj.get("metadata") or {}).get("labels") or {}).get(k) == v for k, v in pairs)


class FakeStore:
    """An in-memory collection with resourceVersions, paging, selectors, watch history and injected faults."""

    def __init__(self, objects=()):
        self.cond = threading.Condition()
        self.version = 100
        self.objects = {}
        self.history = []
        self.calls = []          # (kind, kwargs) of every list/watch request
        self.faults = {"list": [], "watch": []}
        self.watch_preludes = []  # extra events sent first on the next watch streams
        self.gone_before = 0      # watches from an older resourceVersion get 410
        self.drop_streams = False
        self.watch_responses = []
        for obj in objects:
            self.put(obj, record=False)

    @staticmethod
    def key(obj):
        return (obj["metadata"].get("namespace") or "", obj["metadata"]["name"])

    def put(self, obj, record=True):
        with self.cond:
            self.version += 1
            obj = json.loads(json.dumps(obj))
            obj["metadata"]["resourceVersion"] = str(self.version)
            event_type = "MODIFIED" if self.key(obj) in self.objects else "ADDED"
            self.objects[self.key(obj)] = obj
            if record:
                self.history.append((self.version, event_type, obj))
            self.cond.notify_all()
            return obj

    def delete(self, key):
        with self.cond:
            obj = self.objects.pop(key, None)
            if obj is None:
                return None
            self.version += 1
            obj = dict(obj, metadata=dict(obj["metadata"], resourceVersion=str(self.version)))
            self.history.append((self.version, "DELETED", obj))
            self.cond.notify_all()
            return obj

    def list_func(self, **kwargs):
        kind = "watch" if kwargs.get("watch") else "list"
        self.calls.append((kind, kwargs))
        if self.faults[kind]:
            raise self.faults[kind].pop(0)
        field = _field_matcher(kwargs.get("field_selector"))
        label = _label_matcher(kwargs.get("label_selector"))
        namespace = kwargs.get("namespace")

        def matches(obj):
            in_namespace = namespace is None or obj["metadata"].get("namespace") == namespace
            return in_namespace and field(obj) and label(obj)

        with self.cond:
            if kind == "watch":
                since = int(kwargs.get("resource_version") or self.version)
                if since < self.gone_before:
                    raise api_error(410)
                prelude = self.watch_preludes.pop(0) if self.watch_preludes else ()
                response = FakeWatchResponse(self, since, matches, kwargs.get("timeout_seconds"), prelude)
                self.watch_responses.append(response)
                return response
            items = sorted((o for o in self.objects.values() if matches(o)), key=self.key)
            start = int(kwargs.get("_continue") or 0)
            limit = kwargs.get("limit") or len(items)
            page = items[start:start + limit]
            metadata = {"resourceVersion": str(self.version)}
            if start + limit < len(items):
                metadata["continue"] = str(start + limit)
            return FakeResponse({"kind": "List", "metadata": metadata, "items": page})

    def kinds(self):
        return [kind for kind, dummy in self.calls]


class FakeApiServer:
    """A real HTTP API server on 127.0.0.1 over a FakeCoreV1 (``core``, replaceable): GET /version, and the node
    LIST (query parameters as CoreV1Api.list_node sends them; an injected fault is answered with its status).
    For code that builds its own kubernetes client from a kubeconfig or host: point it at ``url``."""

    VERSION = {"major": "1", "minor": "30", "gitVersion": "v1.30.0", "gitCommit": "0", "gitTreeState": "clean",
               "buildDate": "2024-01-01T00:00:00Z", "goVersion": "go1.22", "compiler": "gc",
               "platform": "linux/amd64"}

    def __init__(self, core=None):
        self.core = core if core is not None else FakeCoreV1()
        self.paths = []
        fake = self

        class Handler(http.server.BaseHTTPRequestHandler):
            def log_message(self, *args):
                pass

            def do_GET(self):
                parts = urlsplit(self.path)
                path = parts.path.rstrip("/")
                fake.paths.append(path)
                status, body = 200, None
                if path == "/version":
                    body = json.dumps(fake.VERSION).encode()
                elif path == "/api/v1/nodes":
                    kwargs = dict(FakeApiClient._argument(k, v) for k, v in parse_qsl(parts.query))
                    try:
                        body = fake.core.list_node(**kwargs).data
                    except ApiException as exc:
                        status, body = exc.status, exc.body.encode()
                else:
                    status, body = 404, json.dumps({"kind": "Status", "code": 404}).encode()
                self.send_response(status)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(body)))
                self.end_headers()
                self.wfile.write(body)

        self.httpd = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.httpd.daemon_threads = True
        self.url = "http://127.0.0.1:%d" % self.httpd.server_address[1]
        self._thread = None

    def __enter__(self):
        self._thread = threading.Thread(target=self.httpd.serve_forever, daemon=True)
        self._thread.start()
        return self

    def __exit__(self, *exc_info):
        self.httpd.shutdown()
        self.httpd.server_close()


# ----------------------------------------------------------------------------------------------------------
# Clock
# ----------------------------------------------------------------------------------------------------------

class FakeClock:
    """The one fake clock, from ``start`` (1000 s unless told). Three protocols over one time: host/clock.py's Clock
    (``now()``, ``time()``, ``sleep()``), the time module's (``time()``, ``sleep()``) and a plain time function
    (``clock()``). ``sleeps`` records every sleep asked for; a negative one leaves the time as it is (a real
    clock never goes back). ``advance(seconds)`` moves the time without a sleep."""

    def __init__(self, start=1000.0):
        self.current = float(start)
        self.sleeps = []

    def now(self):
        return self.current

    time = now
    __call__ = now

    def sleep(self, seconds):
        self.sleeps.append(seconds)
        self.current += max(0.0, seconds)

    def advance(self, seconds):
        self.current += seconds


# ----------------------------------------------------------------------------------------------------------
# Pods, nodes and PDB refusals
# ----------------------------------------------------------------------------------------------------------

NOW = datetime.datetime(2024, 6, 1, 12, 0, 0, tzinfo=datetime.timezone.utc)


def make_pod(name, node="node-a", namespace="default", owner="ReplicaSet", phase="Running", empty_dir=False,
             mirror=False, deleting_for=None, labels=None, uid=None, grace=None):
    metadata = {"name": name, "namespace": namespace, "uid": uid or "uid-" + name,
                "labels": labels if labels is not None else {"app": "web"}}
    if owner:
        metadata["ownerReferences"] = [{"kind": owner, "name": owner.lower() + "-1", "controller": True,
                                        "apiVersion": "apps/v1", "uid": "owner"}]
    if mirror:
        metadata["annotations"] = {"kubernetes.io/config.mirror": "hash"}
    if deleting_for is not None:
        metadata["deletionTimestamp"] = (NOW - datetime.timedelta(seconds=deleting_for)).strftime(
            "%Y-%m-%dT%H:%M:%SZ")
    spec = {"nodeName": node, "volumes": [{"name": "v", "emptyDir": {}}] if empty_dir
            else [{"name": "h", "hostPath": {"path": "/var"}}]}
    if grace is not None:
        spec["terminationGracePeriodSeconds"] = grace
    return {"metadata": metadata, "spec": spec, "status": {"phase": phase}}


def node(name="node-a", unschedulable=False, labels=None, annotations=None, taints=None):
    return {"metadata": {"name": name, "uid": "uid-" + name, "labels": dict(labels or {}),
                         "annotations": dict(annotations or {})},
            "spec": {"unschedulable": unschedulable, "taints": taints or []}}


EKSCTL_LABEL = "alpha.eksctl.io/nodegroup-name"
EKSCTL_SELECTOR = EKSCTL_LABEL + "=workers"


def ec2_node(name, instance_id, nodegroup=None, unschedulable=False):
    """A node whose spec.providerID names its instance; ``nodegroup``: the eksctl node-group label it carries
    (none: a node of a plain self-managed group, which carries no node-group label, SPEC K1)."""
    result = node(name, unschedulable=unschedulable, labels={EKSCTL_LABEL: nodegroup} if nodegroup else {})
    result["spec"]["providerID"] = "aws:///us-west-2a/%s" % instance_id
    return result


PDB_STATUS = {"kind": "Status", "code": 429, "reason": "TooManyRequests",
              "message": "Cannot evict pod as it would violate the pod's disruption budget.",
              "details": {"causes": [{"type": "DisruptionBudget",
                                      "message": "The disruption budget web-pdb needs 3 healthy pods and has 3 "
                                                 "currently"}]}}


def pdb_refusal(name="web-pdb"):
    body = dict(PDB_STATUS)
    body["details"] = {"causes": [{"type": "DisruptionBudget",
                                   "message": "The disruption budget %s needs 3 healthy pods and has 3 currently"
                                              % name}]}
    return api_error(429, body=body)


# ----------------------------------------------------------------------------------------------------------
# The drain engine's cluster
# ----------------------------------------------------------------------------------------------------------

class FakeApiClient(ApiClient):
    """A real kubernetes ApiClient whose ``request`` (the one method every generated API class's request reaches,
    its URL and query built) answers from ``cluster``'s methods: the engine's real PolicyV1Api and AppsV1Api, built
    on ``core_v1.api_client`` as in production, run over the fake, parameter checks and URL building included.
    (kubernetes 36's ApiClient, the version test-requirements.txt pins.)"""

    ROUTES = [
        (re.compile(r"/apis/policy/v1/namespaces/(?P<namespace>[^/]+)/poddisruptionbudgets$"),
         "list_namespaced_pod_disruption_budget"),
        (re.compile(r"/apis/apps/v1/namespaces/(?P<namespace>[^/]+)/daemonsets/(?P<name>[^/]+)$"),
         "read_namespaced_daemon_set"),
    ]

    def __init__(self, cluster):
        super().__init__(Configuration(host="http://fake-cluster.invalid"))
        self.cluster = cluster

    @staticmethod
    def _keyword(name):
        """A query parameter's name back as the keyword the Python API took (``labelSelector`` -> label_selector)."""
        return "_continue" if name == "continue" else re.sub(r"([A-Z])", lambda m: "_" + m.group(1).lower(), name)

    @classmethod
    def _argument(cls, name, value):
        """A query parameter of a URL back as the keyword and value the Python API took (``labelSelector=a`` ->
        label_selector='a', ``watch=true`` -> watch=True)."""
        name = cls._keyword(name)
        if value in ("true", "false"):
            return name, value == "true"
        if name in ("limit", "timeout_seconds"):
            return name, int(value)
        return name, value

    def request(self, method, url, query_params=None, headers=None, post_params=None, body=None,
                _preload_content=True, _request_timeout=None):
        parts = urlsplit(url)
        for pattern, operation in self.ROUTES:
            match = pattern.search(parts.path)
            if match:
                break
        else:
            raise AssertionError("the fake cluster does not answer %s %s" % (method, url))
        # kubernetes 36 hands the query over as (name, value) pairs, each value as the Python API took it
        kwargs = dict((self._keyword(name), value) for name, value in (query_params or []))
        kwargs.update((key, unquote(value)) for key, value in match.groupdict().items())
        assert not _preload_content, "the engine reads every response itself (_preload_content=False)"
        try:
            return getattr(self.cluster, operation)(_preload_content=False, **kwargs)
        except ApiException as exc:
            # the REST layer's exception carries the raw body, which ApiClient decodes on its way out
            exc.body = exc.body.encode() if isinstance(exc.body, str) else exc.body
            raise


class FakeCoreV1:
    """The fake CoreV1Api: nodes in a FakeStore (``store``: paging, selectors, injected faults), listed (LIST,
    label selectors), read (GET, 404 for an unknown node) and merge-patched (PATCH, recorded in ``patches`` and
    answered with the patched node, which must be read before its connection is released). Every call is in
    ``requests``; ``calls`` are the label selectors of the node LISTs (None: every node); ``nodes`` is
    {name: node} as the server has it now."""

    def __init__(self, nodes=()):
        self.api_client = FakeApiClient(self)
        self.store = FakeStore(nodes)
        self.patches = []
        self.lock = threading.Lock()
        self.requests = []

    def _record(self, what):
        with self.lock:
            self.requests.append(what)

    @property
    def nodes(self):
        return dict((name, obj) for (dummy, name), obj in self.store.objects.items())

    @property
    def calls(self):
        return [kwargs.get("label_selector") for dummy, kwargs in self.store.calls]

    def list_node(self, **kwargs):
        self._record(("watch" if kwargs.get("watch") else "list", "nodes", kwargs.get("label_selector")))
        return self.store.list_func(**kwargs)

    def read_node(self, name, _preload_content=True):
        self._record(("get", "node", name))
        if ("", name) not in self.store.objects:
            raise api_error(404)
        return FakeResponse(self.store.objects[("", name)])

    def patch_node(self, name, body, _content_type=None, _preload_content=True):
        self._record(("patch", "node", name, json.dumps(body, sort_keys=True)))
        self.patches.append((name, body, _content_type))
        assert _content_type == "application/merge-patch+json", _content_type
        current = self.store.objects.get(("", name))
        if current is None:
            raise api_error(404)
        return FakeResponse(self.store.put(apply_merge_patch(current, body)), must_be_read=True)


class FakeCluster(FakeCoreV1):
    """The drain engine's cluster: FakeCoreV1's nodes (default: node-a) plus pods, evictions, events, PDBs and
    DaemonSets, the last two reached through FakeApiClient as PolicyV1Api and AppsV1Api.

    Evictions follow per-pod scripts: a list of responses consumed per eviction request, an int status (2xx
    evicts) or an ApiException; when a script runs out the last entry repeats. Evicted pods go away after
    ``termination_delay`` seconds.
    """

    def __init__(self, pods=(), nodes=None, pdbs=(), daemonsets=("daemonset-1",), termination_delay=0.05):
        super().__init__(nodes or [node("node-a")])
        self.pods = FakeStore(pods)
        self.pdbs = FakeStore(pdbs)
        self.daemonsets = set(daemonsets)
        self.scripts = {}
        self.termination_delay = termination_delay
        self.budget_refill = 0.1
        self.events = []
        self.in_flight = 0
        self.peak_in_flight = 0

    # pods
    def list_pod_for_all_namespaces(self, **kwargs):
        self._record(("watch" if kwargs.get("watch") else "list", "pods", kwargs.get("field_selector")))
        return self.pods.list_func(**kwargs)

    def create_namespaced_pod_eviction(self, name, namespace, body, _preload_content=True):
        return self._remove("evict", name, namespace, body.delete_options)

    def delete_namespaced_pod(self, name, namespace, body, _preload_content=True):
        return self._remove("delete", name, namespace, body)

    def _remove(self, verb, name, namespace, delete_options):
        with self.lock:
            self.in_flight += 1
            self.peak_in_flight = max(self.peak_in_flight, self.in_flight)
        try:
            time.sleep(0.005)
            self._record((verb, "pod", "%s/%s" % (namespace, name), delete_options.grace_period_seconds))
            key = (namespace, name)
            current = self.pods.objects.get(key)
            if current is None:
                raise api_error(404)
            if delete_options.preconditions.uid != current["metadata"]["uid"]:
                raise api_error(409)
            response = 201
            if verb == "evict":
                response = self._spend_budget(current)
            if verb == "evict" and key in self.scripts:
                script = self.scripts[key]
                response = script.pop(0) if len(script) > 1 else script[0]
            if isinstance(response, Exception):
                raise response
            timer = threading.Timer(self.termination_delay, self.pods.delete, (key,))
            timer.daemon = True
            timer.start()
            return FakeResponse({"kind": "Status", "status": "Success"})
        finally:
            with self.lock:
                self.in_flight -= 1

    def _spend_budget(self, pod):
        """E4 for PDBs that carry a status: spend a disruption, given back `budget_refill` s later."""
        budgets = [p for p in self.pdbs.objects.values() if "status" in p
                   and p["metadata"]["namespace"] == pod["metadata"]["namespace"]
                   and selector_matches(p["spec"]["selector"], pod["metadata"]["labels"])]
        if not budgets:
            return 201
        [pdb] = budgets
        with self.pdbs.cond:
            allowed = pdb["status"]["disruptionsAllowed"]
            if allowed <= 0:
                return pdb_refusal(pdb["metadata"]["name"])
            self.pdbs.put(dict(pdb, status={"disruptionsAllowed": allowed - 1}))
        timer = threading.Timer(self.budget_refill, self._refill, (self.pdbs.key(pdb),))
        timer.daemon = True
        timer.start()
        return 201

    def _refill(self, key):
        with self.pdbs.cond:
            pdb = self.pdbs.objects[key]
            self.pdbs.put(dict(pdb, status={"disruptionsAllowed": pdb["status"]["disruptionsAllowed"] + 1}))

    # events, daemonsets, pdbs
    def create_namespaced_event(self, namespace, body, _preload_content=True):
        self._record(("create", "event", body.involved_object.name))
        self.events.append((namespace, body))
        return FakeResponse({})

    def read_namespaced_daemon_set(self, name, namespace, _preload_content=True):
        self._record(("get", "daemonset", name))
        if name not in self.daemonsets:
            raise api_error(404)
        return FakeResponse({"metadata": {"name": name}})

    def list_namespaced_pod_disruption_budget(self, namespace, **kwargs):
        self._record(("watch" if kwargs.get("watch") else "list", "pdbs", namespace))
        return self.pdbs.list_func(namespace=namespace, **kwargs)

    def verbs(self, verb, kind=None):
        return [r for r in self.requests if r[0] == verb and (kind is None or r[1] == kind)]

    def event_reasons(self):
        return [body.reason for _ns, body in self.events]


# FakeCluster's old name, from when only a subclass of it listed nodes; the modules' tests still use it.
NodeListing = FakeCluster

# PDB refusals in drains retried this often instead of every 5 s (drain_nodes' pdb_retry_seconds).
FAST_PDB_RETRY_SECONDS = 0.05


def run_drain(cluster, names=("node-a",), pdb_retry_seconds=FAST_PDB_RETRY_SECONDS, server_error_retries=None,
              load_balancers=None, on_emptied=None, **options):
    """drain_nodes on ``cluster`` with the test defaults; the retry settings, the load balancers and on_emptied are
    drain_nodes' keywords (None: the engine's default)."""
    options.setdefault("run_id", "run-1")
    options.setdefault("post_drain_wait", 0)
    options.setdefault("drain_timeout", 5)
    keywords = dict(pdb_retry_seconds=pdb_retry_seconds, server_error_retries=server_error_retries,
                    load_balancers=load_balancers, on_emptied=on_emptied)
    return drain_nodes(cluster, list(names), options, **dict((k, v) for k, v in keywords.items() if v is not None))


class FakeNodegroup:
    """A node group (nodegroup.NodegroupRef's surface the planner and the loop use) around a canned description of
    its Auto Scaling group, whose tags hold the journal."""

    asg_name = "workers-asg"

    def __init__(self, asg):
        self.asg = asg

    def with_asg(self, asg):
        return FakeNodegroup(asg)

    def journal(self):
        return Journal.from_tags(self.asg.get("Tags"))
