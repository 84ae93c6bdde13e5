# -*- coding: utf-8 -*-
# Copyright: Contributors to the eksops.nodegroup project
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""The REST-JSON wire side of the node-group operations the sandbox answers instead of moto.

Requests are read where botocore's EKS model puts each member (uri, querystring, JSON body); responses and errors
are written the way botocore's rest-json parser reads them: a JSON body whose timestamps are epoch seconds, and
for an error the HTTP status of its error shape, an x-amzn-ErrorType header naming it and a JSON body with message
and the shape's other members.
"""

from __future__ import annotations

import json
import re
import uuid
from functools import lru_cache
from typing import TYPE_CHECKING, Any
from urllib.parse import parse_qs, unquote

import botocore.session

from .operations import OPERATIONS, EksError

if TYPE_CHECKING:
    from .service import EksNodegroups

__all__ = ["answer"]

# These two also serve the cluster's own updates: without nodegroupName the request is moto's.
_SHARED_WITH_CLUSTERS = ("DescribeUpdate", "ListUpdates")


@lru_cache(maxsize=None)
def _model() -> Any:
    return botocore.session.get_session().get_service_model("eks")


@lru_cache(maxsize=None)
def _uri_pattern(operation: str) -> re.Pattern[str]:
    uri = _model().operation_model(operation).http["requestUri"].split("?", 1)[0]
    return re.compile("^" + re.sub(r"\\\{([^}]+)\\\}", r"(?P<\1>[^/]+)", re.escape(uri)) + "/?$")


def _params(operation: str, path: str, query: dict[str, list[str]], body: bytes) -> dict[str, Any]:
    """The operation's input members by name, read from where the model serializes each."""
    shape = _model().operation_model(operation).input_shape
    in_path = _uri_pattern(operation).match(path)
    document = json.loads(body) if body.strip() else {}
    params: dict[str, Any] = {}
    for name, member in shape.members.items():
        location, wire_name = member.serialization.get("location"), member.serialization.get("name", name)
        if location == "uri":
            value = unquote(in_path.group(wire_name)) if in_path else None
        elif location == "querystring":
            value = query.get(wire_name, [None])[0]
            if value is not None and member.type_name == "integer":
                value = int(value)
        else:
            value = document.get(wire_name)
        if value is not None:
            params[name] = value
    return params


def _reply(status: int, body: dict[str, Any], error_code: str | None = None
           ) -> tuple[int, list[tuple[str, str]], bytes]:
    headers = [("Content-Type", "application/json"), ("x-amzn-RequestId", str(uuid.uuid4()))]
    if error_code:
        headers.append(("x-amzn-ErrorType", error_code))
    return status, headers, json.dumps(body).encode("utf-8")


def answer(eks: EksNodegroups, operation: str | None, environ: dict[str, Any], body: bytes
           ) -> tuple[int, list[tuple[str, str]], bytes] | None:
    """(status, headers, body) of a node-group operation, or None when the request is not one (moto serves it)."""
    if operation not in OPERATIONS:
        return None
    query = parse_qs(environ.get("QUERY_STRING", ""))
    if operation in _SHARED_WITH_CLUSTERS and "nodegroupName" not in query:
        return None
    try:
        params = _params(operation, environ.get("PATH_INFO", ""), query, body)
        return _reply(200, OPERATIONS[operation](eks, **params))
    except EksError as error:
        status = _model().shape_for(error.code).metadata["error"]["httpStatusCode"]
        return _reply(status, error.body, error.code)
