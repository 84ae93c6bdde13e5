# -*- coding: utf-8 -*-
# Copyright: Contributors to the eksops.nodegroup project
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""The HTTP(S) front of the simulated API server: routing, authentication, faults, request records,
JSON responses and chunked watch streams."""

from __future__ import annotations

import json
import logging
import socket
import ssl
import threading
import time
from dataclasses import dataclass
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any
from urllib.parse import parse_qs, urlsplit

from . import discovery, errors, tables
from .api import Api
from .auth import Authenticator, Unauthorized
from .eviction import evict
from .resources import ResourceType, lookup
from .selectors import parse_field_selector, parse_label_selector
from .watch import WatchStream

log = logging.getLogger(__name__)

# A watch without timeoutSeconds ends after this long, as the API server's --min-request-timeout does.
DEFAULT_WATCH_SECONDS = 1800.0
_PUBLIC_PATHS = {"/version", "/healthz", "/livez", "/readyz"}


@dataclass
class Route:
    verb: str
    resource: str  # what the request record names: "pods", "pods/eviction", "discovery"
    rt: ResourceType | None = None
    namespace: str | None = None
    name: str | None = None
    subresource: str | None = None
    document: Any = None  # a discovery answer


class ServerContext:
    """What request handlers share: the API, auth, the recorder, the faults and the stop signal."""

    def __init__(self, api: Api, authenticator: Authenticator, recorder, faults, kubernetes_version: str):
        self.api = api
        self.authenticator = authenticator
        self.recorder = recorder
        self.faults = faults
        self.kubernetes_version = kubernetes_version
        self.stopping = threading.Event()
        self.address = ""


class ApiHttpServer(ThreadingHTTPServer):
    daemon_threads = True
    allow_reuse_address = True

    def __init__(self, context: ServerContext, ssl_context: ssl.SSLContext | None):
        self.context = context
        super().__init__(("127.0.0.1", 0), ApiRequestHandler)
        if ssl_context is not None:
            # The handshake happens in the connection's own thread, on its first read.
            self.socket = ssl_context.wrap_socket(self.socket, server_side=True, do_handshake_on_connect=False)

    def handle_error(self, request, client_address) -> None:
        log.debug("connection from %s ended with an error", client_address, exc_info=True)


def _one(query: dict[str, list[str]], name: str) -> str | None:
    values = query.get(name)
    return values[-1] if values else None


def _true(value: str | None) -> bool:
    return value is not None and value.lower() in ("true", "1")


def _int_param(query: dict[str, list[str]], name: str) -> int | None:
    value = _one(query, name)
    if value in (None, ""):
        return None
    try:
        return int(value)
    except ValueError:
        raise errors.bad_request(f"{name}: invalid integer {value!r}") from None


class ApiRequestHandler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    server_version = "eks-sandbox-apiserver"
    timeout = 120
    # TCP_NODELAY on every connection, as the API server has it: Go's net package turns Nagle's algorithm off on
    # every TCP connection ("The default is true (no delay)", net.TCPConn.SetNoDelay). With it on, a response's
    # body (written after its headers) waited for the client's delayed ACK: about 40 ms added to every request.
    disable_nagle_algorithm = True
    server: ApiHttpServer

    def log_message(self, format: str, *args: Any) -> None:  # noqa: A002 - the base class's name
        log.debug("%s %s", self.address_string(), format % args)

    def do_GET(self) -> None:  # noqa: N802 - http.server's naming
        self._handle("GET")

    def do_POST(self) -> None:  # noqa: N802
        self._handle("POST")

    def do_PUT(self) -> None:  # noqa: N802
        self._handle("PUT")

    def do_PATCH(self) -> None:  # noqa: N802
        self._handle("PATCH")

    def do_DELETE(self) -> None:  # noqa: N802
        self._handle("DELETE")

    # -- request handling --

    def _handle(self, method: str) -> None:
        ctx = self.server.context
        parts = urlsplit(self.path)
        query = parse_qs(parts.query, keep_blank_values=True)
        user_agent = self.headers.get("User-Agent", "")
        route = Route(method.lower(), "unknown")
        try:
            body = self._read_body()
            routing_error = None
            try:
                route = self._route(method, parts.path.rstrip("/") or "/", query)
            except errors.ApiError as failure:
                routing_error = failure
            # As the API server: authentication comes first, even for paths that do not exist.
            try:
                user = ctx.authenticator.authenticate(self.headers.get("Authorization"))
            except Unauthorized:
                raise errors.ApiError(401, "Unauthorized") from None
            if user is None and parts.path not in _PUBLIC_PATHS:
                raise errors.ApiError(401, "Unauthorized")
            if routing_error is not None:
                raise routing_error
            if route.rt is not None:
                fault = ctx.faults.k8s_error(route.verb, route.resource)
                if fault is not None:
                    status, retry_after = fault
                    raise errors.ApiError(status, f"injected fault: {route.verb} {route.resource} answered "
                                                  f"with {status}", retry_after=retry_after and max(1, round(retry_after)))
            # Content negotiation of a read (tables.negotiate): the object(s), or the Table kubectl asks for.
            table = None
            if route.rt is not None and route.verb in ("get", "list", "watch"):
                table = tables.negotiate(self.headers.get("Accept"), query)
            if route.verb == "watch":
                self._watch(route, query, table)
                return
            status, payload = self._serve(route, query, body)
            if table is not None:
                payload = table.convert(route.rt, payload)
        except errors.ApiError as failure:
            status, payload = failure.code, failure.status()
            retry = failure.retry_after
            ctx.recorder.k8s_request(user_agent, route.verb, route.resource, status)
            self._send_json(status, payload, {"Retry-After": str(int(retry))} if retry else None)
            return
        ctx.recorder.k8s_request(user_agent, route.verb, route.resource, status)
        self._send_json(status, payload)

    def _read_body(self) -> Any:
        length = int(self.headers.get("Content-Length") or 0)
        if not length:
            return None
        raw = self.rfile.read(length)
        try:
            return json.loads(raw)
        except ValueError:
            raise errors.bad_request("the request body is not valid JSON") from None

    def _route(self, method: str, path: str, query: dict[str, list[str]]) -> Route:
        ctx = self.server.context
        segments = [s for s in path.split("/") if s]
        not_found = errors.ApiError(404, "the server could not find the requested resource")
        if path in _PUBLIC_PATHS:
            document = discovery.version_info(ctx.kubernetes_version) if path == "/version" else "ok"
            return Route("get", path.strip("/"), document=document)
        if segments == ["api"]:
            return Route("get", "discovery", document=discovery.core_versions(ctx.address))
        if segments == ["apis"]:
            return Route("get", "discovery", document=discovery.group_list())
        if len(segments) == 2 and segments[0] == "apis":
            document = discovery.group(segments[1])
            if document is None:
                raise not_found
            return Route("get", "discovery", document=document)
        if segments[:1] == ["api"] and len(segments) >= 2:
            group, version, rest = "", segments[1], segments[2:]
        elif segments[:1] == ["apis"] and len(segments) >= 3:
            group, version, rest = segments[1], segments[2], segments[3:]
        else:
            raise not_found
        if not rest:
            document = discovery.resource_list(group, version)
            if document is None:
                raise not_found
            return Route("get", "discovery", document=document)
        namespace = None
        if len(rest) >= 3 and rest[0] == "namespaces" and lookup(group, version, rest[2]) is not None:
            namespace, rest = rest[1], rest[2:]
        rt = lookup(group, version, rest[0])
        if rt is None or len(rest) > 3 or (rt.namespaced is False and namespace is not None):
            raise not_found
        name = rest[1] if len(rest) >= 2 else None
        subresource = rest[2] if len(rest) == 3 else None
        if subresource is not None and subresource not in rt.subresources:
            raise not_found
        if rt.namespaced and name is not None and namespace is None:
            raise not_found
        verb = self._verb(method, name, subresource, query)
        resource = f"{rt.plural}/{subresource}" if subresource else rt.plural
        return Route(verb, resource, rt, namespace, name, subresource)

    @staticmethod
    def _verb(method: str, name: str | None, subresource: str | None, query: dict[str, list[str]]) -> str:
        if subresource == "eviction":
            if method != "POST":
                raise errors.ApiError(405, f"{method} is not supported on pods/eviction")
            return "create"
        verbs = {("GET", False): "list", ("GET", True): "get", ("POST", False): "create",
                 ("PUT", True): "update", ("PATCH", True): "patch", ("DELETE", True): "delete"}
        verb = verbs.get((method, name is not None))
        if verb is None:
            raise errors.ApiError(405, f"{method} is not supported here")
        if method == "GET" and _true(_one(query, "watch")):
            return "watch"
        return verb

    def _serve(self, route: Route, query: dict[str, list[str]], body: Any) -> tuple[int, Any]:
        if route.document is not None:
            return 200, route.document
        api = self.server.context.api
        rt, namespace, name = route.rt, route.namespace, route.name
        if route.verb == "list":
            listed = api.list(rt, namespace, label_selector=_one(query, "labelSelector"),
                              field_selector=_one(query, "fieldSelector"), limit=_int_param(query, "limit"),
                              continue_token=_one(query, "continue"))
            return 200, listed
        if route.verb == "get":
            return 200, api.get(rt, namespace or "", name)
        if route.verb == "create":
            if route.subresource == "eviction":
                return 201, evict(api, namespace, name, body)
            return 201, api.create(rt, namespace, body)
        if route.verb == "update":
            return 200, api.update(rt, namespace or "", name, body, route.subresource)
        if route.verb == "patch":
            content_type = (self.headers.get("Content-Type") or "").split(";")[0].strip()
            return 200, api.patch(rt, namespace or "", name, body, content_type, route.subresource)
        options = dict(body) if isinstance(body, dict) else {}
        for param in ("gracePeriodSeconds", "propagationPolicy"):
            if _one(query, param) is not None and param not in options:
                options[param] = _int_param(query, param) if param == "gracePeriodSeconds" else _one(query, param)
        if _one(query, "orphanDependents") is not None and "orphanDependents" not in options:
            options["orphanDependents"] = _true(_one(query, "orphanDependents"))
        return 200, api.delete(rt, namespace or "", name, options)

    # -- watch --

    def _watch(self, route: Route, query: dict[str, list[str]], table: tables.TableRequest | None) -> None:
        ctx = self.server.context
        user_agent = self.headers.get("User-Agent", "")
        field_selector = _one(query, "fieldSelector")
        if route.name is not None:
            by_name = f"metadata.name={route.name}"
            field_selector = f"{field_selector},{by_name}" if field_selector else by_name
        if ctx.faults.watch_gone():
            raise errors.expired("too old resource version: injected fault (watch_gone)")
        timeout = _int_param(query, "timeoutSeconds")
        duration = float(timeout) if timeout and timeout > 0 else DEFAULT_WATCH_SECONDS
        drop_after = ctx.faults.watch_drop_after()
        if drop_after is not None:
            duration = min(duration, drop_after)
        stream = WatchStream(ctx.api.store, route.rt, route.namespace,
                             parse_label_selector(_one(query, "labelSelector")),
                             parse_field_selector(field_selector, route.rt.field_getters, route.rt.kind),
                             _one(query, "resourceVersion"), _true(_one(query, "allowWatchBookmarks")),
                             time.monotonic() + duration, ctx.stopping)
        ctx.recorder.k8s_request(user_agent, "watch", route.resource, 200)
        self.send_response(200)
        self.send_header("Content-Type", "application/json")
        self.send_header("Transfer-Encoding", "chunked")
        self.send_header("Cache-Control", "no-cache, private")
        self.end_headers()
        self.close_connection = True
        convert = tables.WatchTables(table, route.rt).event if table is not None else None
        try:
            for event in stream.events():
                if convert is not None:
                    event = convert(event)
                self._write_chunk(json.dumps(event, separators=(",", ":")).encode() + b"\n")
            self.wfile.write(b"0\r\n\r\n")
            self.wfile.flush()
        except (BrokenPipeError, ConnectionResetError, socket.timeout, ssl.SSLError, OSError):
            log.debug("watch client went away")

    def _write_chunk(self, data: bytes) -> None:
        self.wfile.write(f"{len(data):x}\r\n".encode() + data + b"\r\n")
        self.wfile.flush()

    def _send_json(self, status: int, payload: Any, headers: dict[str, str] | None = None) -> None:
        data = json.dumps(payload, separators=(",", ":")).encode()
        self.send_response(status)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(data)))
        self.send_header("Cache-Control", "no-cache, private")
        for name, value in (headers or {}).items():
            self.send_header(name, value)
        self.end_headers()
        self.wfile.write(data)
