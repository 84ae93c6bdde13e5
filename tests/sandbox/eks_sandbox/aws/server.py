# -*- coding: utf-8 -*-
# Copyright: Contributors to the eksops.nodegroup project
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""The HTTP side of the simulated AWS: moto's server app behind a middleware that serialises requests with the
simulation lock, records every call and answers injected faults with AWS-shaped errors.
"""

from __future__ import annotations

import io
import json
import re
import threading
import uuid
from functools import lru_cache
from typing import Any, Callable, Iterable
from urllib.parse import parse_qs

import botocore.session
from moto.moto_server.threaded_moto_server import ThreadedMotoServer
from moto.moto_server.werkzeug_app import DomainDispatcherApplication, MotoRequestHandler, create_backend_app
from werkzeug.serving import make_server

__all__ = ["AwsRequestMiddleware", "LockedMotoServer", "identify_call", "error_response"]

# Status codes AWS answers these error codes with; every other injected code is a client error (400).
_SERVER_ERROR_STATUS = {"InternalFailure": 500, "InternalError": 500, "ServiceUnavailable": 503,
                        "Unavailable": 503}
_ERROR_MESSAGES = {"Throttling": "Rate exceeded", "ThrottlingException": "Rate exceeded",
                   "RequestLimitExceeded": "Request limit exceeded."}

# How often the server loop checks for stop(): stop() waits up to this long (werkzeug's default is 0.5 s).
SHUTDOWN_POLL_SECONDS = 0.05

_CREDENTIAL_SCOPE = re.compile(r"Credential=[^/]+/\d{8}/([^/]+)/([^/]+)/aws4_request")
_XML_ERROR_CODE = re.compile(rb"<Code>([^<]+)</Code>")


@lru_cache(maxsize=None)
def _service_model(service: str) -> Any | None:
    try:
        return botocore.session.get_session().get_service_model(service)
    except Exception:  # an unknown signing name: the call is still served and recorded, by its path
        return None


@lru_cache(maxsize=None)
def _rest_routes(service: str) -> list[tuple[str, re.Pattern[str], str]]:
    """(method, path regex, operation) for a REST service, most specific path first."""
    model = _service_model(service)
    routes = []
    for name in model.operation_names:
        http = model.operation_model(name).http
        path = http["requestUri"].split("?", 1)[0]
        pattern = re.sub(r"\\\{[^}]+?\\\+\\\}", ".+", re.escape(path))
        pattern = re.sub(r"\\\{[^}]+\\\}", "[^/]+", pattern)
        routes.append((http["method"], re.compile(f"^{pattern}/?$"), name, path.count("{")))
    routes.sort(key=lambda route: route[3])
    return [(method, regex, name) for method, regex, name, dummy in routes]


def _read_body(environ: dict[str, Any]) -> bytes:
    """The request body; the WSGI input is replaced so moto reads it again."""
    try:
        length = int(environ.get("CONTENT_LENGTH") or 0)
    except ValueError:
        length = 0
    body = environ["wsgi.input"].read(length) if length > 0 else b""
    environ["wsgi.input"] = io.BytesIO(body)
    return body


def identify_call(environ: dict[str, Any]) -> tuple[str | None, str | None]:
    """(service signing name, operation name) of an AWS request, e.g. ("eks", "DescribeCluster").

    Query protocols name the operation in the Action parameter, JSON protocols in X-Amz-Target, REST
    protocols by method and path (matched against botocore's model of the service).
    """
    scope = _CREDENTIAL_SCOPE.search(environ.get("HTTP_AUTHORIZATION", ""))
    service = scope.group(2) if scope else None
    target = environ.get("HTTP_X_AMZ_TARGET")
    if target:
        return service, target.rsplit(".", 1)[-1]
    action = parse_qs(environ.get("QUERY_STRING", "")).get("Action")
    if not action and environ.get("CONTENT_TYPE", "").startswith("application/x-www-form-urlencoded"):
        action = parse_qs(_read_body(environ).decode("utf-8", "replace")).get("Action")
    if action:
        return service, action[0]
    model = _service_model(service) if service else None
    if model is not None and model.metadata["protocol"].startswith("rest"):
        method, path = environ.get("REQUEST_METHOD", "GET"), environ.get("PATH_INFO", "")
        for route_method, regex, name in _rest_routes(service):
            if route_method == method and regex.match(path):
                return service, name
    return service, None


def signed_region(environ: dict[str, Any]) -> str | None:
    """The region an AWS request's SigV4 credential scope names (AWS throttles per account and region), or None."""
    scope = _CREDENTIAL_SCOPE.search(environ.get("HTTP_AUTHORIZATION", ""))
    return scope.group(1) if scope else None


def error_response(service: str | None, code: str) -> tuple[int, list[tuple[str, str]], bytes]:
    """(status, headers, body) of an AWS error in the wire format of the service's protocol."""
    status = _SERVER_ERROR_STATUS.get(code, 400)
    message = _ERROR_MESSAGES.get(code, f"{code} (injected by the sandbox)")
    request_id = str(uuid.uuid4())
    model = _service_model(service) if service else None
    protocol = model.metadata["protocol"] if model is not None else "query"
    headers = [("x-amzn-RequestId", request_id)]
    if protocol == "ec2":
        body = (f'<?xml version="1.0" encoding="UTF-8"?>\n<Response><Errors><Error><Code>{code}</Code>'
                f"<Message>{message}</Message></Error></Errors><RequestID>{request_id}</RequestID></Response>")
        headers.append(("Content-Type", "text/xml"))
    elif protocol == "query":
        namespace = model.metadata.get("xmlNamespace", "") if model is not None else ""
        body = (f'<ErrorResponse xmlns="{namespace}"><Error><Type>{"Sender" if status < 500 else "Receiver"}'
                f"</Type><Code>{code}</Code><Message>{message}</Message></Error>"
                f"<RequestId>{request_id}</RequestId></ErrorResponse>")
        headers.append(("Content-Type", "text/xml"))
    elif protocol == "json":
        body = json.dumps({"__type": code, "message": message})
        headers.append(("Content-Type", f"application/x-amz-json-{model.metadata.get('jsonVersion', '1.1')}"))
    else:  # rest-json, rest-xml readers both honour the error-type header
        body = json.dumps({"message": message})
        headers += [("Content-Type", "application/json"), ("x-amzn-ErrorType", code)]
    return status, headers, body.encode("utf-8")


def _error_code_of(status: int, headers: list[tuple[str, str]], body: bytes) -> str | None:
    if status < 400:
        return None
    for name, value in headers:
        if name.lower() == "x-amzn-errortype":
            return value.split(":", 1)[0]
    match = _XML_ERROR_CODE.search(body)
    if match:
        return match.group(1).decode("utf-8", "replace")
    try:
        document = json.loads(body)
    except ValueError:
        return f"HTTP{status}"
    code = document.get("__type") or document.get("code") if isinstance(document, dict) else None
    return code.rsplit("#", 1)[-1] if code else f"HTTP{status}"


class AwsRequestMiddleware:
    """WSGI middleware around moto's dispatcher.

    Every AWS request is served while holding `lock`, recorded as `recorder.aws_call(action, error code or
    None)`, and answered with an AWS-shaped error instead when `faults.aws_error(action)` names one. The EKS
    node-group operations are answered by `eks` (eks_sandbox.eks: `eks.answer(...)` returns None for any other
    request), everything else by moto. moto's own endpoints (/moto-api) pass through unrecorded.
    """

    def __init__(self, app: Callable[..., Iterable[bytes]], lock: threading.RLock, recorder: Any, faults: Any,
                 eks: Any = None):
        self.app = app
        self.lock = lock
        self.recorder = recorder
        self.faults = faults
        self.eks = eks

    def __call__(self, environ: dict[str, Any], start_response: Callable[..., Any]) -> Iterable[bytes]:
        if environ.get("PATH_INFO", "").startswith("/moto-api"):
            with self.lock:
                return list(self.app(environ, start_response))
        service, action = identify_call(environ)
        action = action or f"{environ.get('REQUEST_METHOD')} {environ.get('PATH_INFO')}"
        region = signed_region(environ)
        injected = self.faults.aws_error(action)
        if injected:
            status, headers, body = error_response(service, injected)
            self.recorder.aws_call(action, injected, environ.get("HTTP_USER_AGENT", ""), region)
            start_response(f"{status} Error", headers + [("Content-Length", str(len(body)))])
            return [body]
        if service == "eks" and self.eks is not None:
            with self.lock:
                answered = self.eks.answer(action, environ, _read_body(environ))
            if answered is not None:
                status, headers, body = answered
                self.recorder.aws_call(action, _error_code_of(status, headers, body), environ.get("HTTP_USER_AGENT", ""),
                                       region)
                start_response(f"{status} {'OK' if status < 400 else 'Error'}",
                               headers + [("Content-Length", str(len(body)))])
                return [body]
        captured: dict[str, Any] = {}

        def capture_start_response(status: str, headers: list[tuple[str, str]], exc_info: Any = None) -> Any:
            captured["status"], captured["headers"] = int(status.split(" ", 1)[0]), headers
            return start_response(status, headers, exc_info)

        with self.lock:
            result = self.app(environ, capture_start_response)
            try:
                body = b"".join(result)
            finally:
                if hasattr(result, "close"):
                    result.close()
        self.recorder.aws_call(action, _error_code_of(captured.get("status", 500), captured.get("headers", []), body),
                               environ.get("HTTP_USER_AGENT", ""), region)
        return [body]


class _QuietRequestHandler(MotoRequestHandler):
    """No access-log line per request (the recorder counts calls; errors are still logged)."""

    def log_request(self, code: int | str = "-", size: int | str = "-") -> None:
        pass


class LockedMotoServer(ThreadedMotoServer):
    """moto's threaded server with its WSGI app wrapped by `wrap` (moto offers no hook for that)."""

    def __init__(self, wrap: Callable[[Any], Any], ip_address: str = "127.0.0.1", port: int = 0):
        super().__init__(ip_address=ip_address, port=port, verbose=False)
        self._wrap = wrap

    def _server_entry(self) -> None:
        app = self._wrap(DomainDispatcherApplication(create_backend_app))
        self._server = make_server(self._ip_address, self._port, app, True, request_handler=_QuietRequestHandler)
        self._server_ready_event.set()
        self._server.serve_forever(poll_interval=SHUTDOWN_POLL_SECONDS)
