# -*- coding: utf-8 -*-
# Copyright: Contributors to the eksops.nodegroup project
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""API errors as the Kubernetes API server reports them: an HTTP status with a `Status` object body."""

from __future__ import annotations

from typing import Any

_REASONS = {400: "BadRequest", 401: "Unauthorized", 403: "Forbidden", 404: "NotFound", 405: "MethodNotAllowed",
            406: "NotAcceptable", 409: "Conflict", 410: "Expired", 415: "UnsupportedMediaType",
            422: "Invalid", 429: "TooManyRequests", 500: "InternalError", 503: "ServiceUnavailable",
            504: "Timeout"}


def reason_for(code: int) -> str:
    return _REASONS.get(code, "Unknown")


class ApiError(Exception):
    """A failed request; `status()` is the body, `retry_after` (seconds) becomes the Retry-After header."""

    def __init__(self, code: int, message: str, *, reason: str | None = None,
                 details: dict[str, Any] | None = None, retry_after: int | None = None):
        super().__init__(message)
        self.code = code
        self.message = message
        self.reason = reason or reason_for(code)
        self.details = details
        self.retry_after = retry_after

    def status(self) -> dict[str, Any]:
        body: dict[str, Any] = {"kind": "Status", "apiVersion": "v1", "metadata": {}, "status": "Failure",
                                "message": self.message, "reason": self.reason, "code": self.code}
        details = dict(self.details or {})
        if self.retry_after:
            details["retryAfterSeconds"] = int(self.retry_after)
        if details:
            body["details"] = details
        return body


def success_status(code: int = 200, details: dict[str, Any] | None = None) -> dict[str, Any]:
    body: dict[str, Any] = {"kind": "Status", "apiVersion": "v1", "metadata": {}, "status": "Success", "code": code}
    if details:
        body["details"] = details
    return body


def _details(rt, name: str) -> dict[str, Any]:
    details = {"name": name, "kind": rt.plural}
    if rt.group:
        details["group"] = rt.group
    return details


def not_found(rt, name: str) -> ApiError:
    return ApiError(404, f'{rt.qualified} "{name}" not found', details=_details(rt, name))


def already_exists(rt, name: str) -> ApiError:
    return ApiError(409, f'{rt.qualified} "{name}" already exists', reason="AlreadyExists",
                    details=_details(rt, name))


def modified_conflict(rt, name: str) -> ApiError:
    return ApiError(409, f'Operation cannot be fulfilled on {rt.qualified} "{name}": the object has been '
                         "modified; please apply your changes to the latest version and try again",
                    details=_details(rt, name))


def precondition_conflict(rt, name: str, field: str, wanted: str, actual: str) -> ApiError:
    label = "UID" if field == "uid" else "ResourceVersion"
    return ApiError(409, f"Operation cannot be fulfilled on {rt.qualified} \"{name}\": Precondition failed: "
                         f"{label} in precondition: {wanted}, {label} in object meta: {actual}",
                    details=_details(rt, name))


def invalid(rt, name: str, message: str) -> ApiError:
    return ApiError(422, f'{rt.kind} "{name}" is invalid: {message}', details=_details(rt, name))


def bad_request(message: str) -> ApiError:
    return ApiError(400, message)


def expired(message: str) -> ApiError:
    return ApiError(410, message, reason="Expired")
