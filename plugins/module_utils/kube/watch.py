# -*- coding: utf-8 -*-
# Copyright: Contributors to the eksops.nodegroup project
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Polite Kubernetes reads and retries: paged LIST, LIST-then-WATCH with resumption, jittered retries.

SPEC P1 (watch from the LIST's resourceVersion, re-list on 410 Gone, reconnect when the server closes the
stream, bounded by our own clock rather than the server's ``timeoutSeconds``) and P3 (retry 429 honouring
Retry-After, and 5xx for idempotent calls, with jittered backoff).

Objects handled here are the raw JSON dicts the API server sent (``{"metadata": {...}, "spec": ...}``): no
model deserialisation, so a LIST of a few hundred pods stays cheap and tolerant of fields the client's models
do not know.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Mapping
from typing import Any
import json
import random
import sys
import threading

from ansible_collections.eksops.nodegroup.plugins.module_utils.host import clock as clocks
from ansible_collections.eksops.nodegroup.plugins.module_utils.host.clock import Clock

try:
    import urllib3.exceptions as urllib3_exceptions

    TRANSPORT_ERRORS = (urllib3_exceptions.HTTPError, ConnectionError, OSError)
except ImportError:  # pragma: no cover
    TRANSPORT_ERRORS = (ConnectionError, OSError)


def api_exception() -> type[Exception] | tuple[()]:
    """The kubernetes client's ApiException, for isinstance and except; () (which matches nothing) while the client
    is not loaded, since then nothing can have raised one. Looked up, not imported: importing the client costs about
    0.6 s of CPU, which the modules that never reach Kubernetes do not pay (client.kubernetes_import_error)."""
    exceptions = sys.modules.get("kubernetes.client.exceptions")
    return () if exceptions is None else exceptions.ApiException


# Page size for LISTs (D2, P2).
LIST_PAGE_SIZE = 500
# A single watch request lasts at most this long on the server; we reconnect from the last resourceVersion.
WATCH_WINDOW_SECONDS = 300
# How long the socket may stay silent beyond the watch window before we treat the stream as dead.
WATCH_READ_SLACK_SECONDS = 30
CONNECT_TIMEOUT_SECONDS = 10
# Without a caller deadline, retries of one call stop after this long.
DEFAULT_RETRY_WINDOW_SECONDS = 120
BACKOFF_BASE_SECONDS = 0.5
BACKOFF_CAP_SECONDS = 30.0
RETRYABLE_SERVER_ERRORS = (500, 502, 503, 504)
HTTP_GONE = 410
HTTP_TOO_MANY_REQUESTS = 429


def jittered(seconds: float, spread: float = 0.2, rng: Any = random) -> float:
    """``seconds`` stretched by up to ``spread`` (never shortened: Retry-After is a minimum)."""
    return seconds * (1.0 + rng.uniform(0.0, spread))


def backoff_delay(attempt: int, base: float = BACKOFF_BASE_SECONDS, cap: float = BACKOFF_CAP_SECONDS, rng: Any = random) -> float:
    """Exponential backoff with "equal jitter": half fixed, half random, for retry ``attempt`` (0-based)."""
    ceiling = min(cap, base * (2 ** attempt))
    return ceiling / 2.0 + rng.uniform(0.0, ceiling / 2.0)


def header_value(headers: Mapping[str, str] | None, name: str) -> str | None:
    """Case-insensitive header lookup over a dict, an HTTPHeaderDict or None."""
    if not headers:
        return None
    value = headers.get(name) if hasattr(headers, "get") else None
    if value is not None:
        return value
    lowered = name.lower()
    for key in headers:
        if key.lower() == lowered:
            return headers[key]
    return None


def retry_after_seconds(headers: Mapping[str, str] | None) -> float | None:
    """The Retry-After header in seconds (delta-seconds form, as kube-apiserver sends it), or None."""
    value = header_value(headers, "Retry-After")
    if value is None:
        return None
    try:
        seconds = float(value)
    except (TypeError, ValueError):
        return None
    return max(0.0, seconds)


def retry_delay(exc: BaseException, attempt: int, idempotent: bool, rng: Any = random) -> float | None:
    """Seconds to wait before retrying after ``exc``, or None when the call must not be retried (P3)."""
    if isinstance(exc, api_exception()):
        status = exc.status
        if status == HTTP_TOO_MANY_REQUESTS:
            retry_after = retry_after_seconds(exc.headers)
            if retry_after is not None:
                return jittered(retry_after, rng=rng)
            return backoff_delay(attempt, rng=rng)
        if idempotent and status in RETRYABLE_SERVER_ERRORS:
            retry_after = retry_after_seconds(exc.headers)
            return jittered(retry_after, rng=rng) if retry_after is not None else backoff_delay(attempt, rng=rng)
        return None
    if idempotent and isinstance(exc, TRANSPORT_ERRORS):
        return backoff_delay(attempt, rng=rng)
    return None


def retry_api_call(fn: Callable[..., Any], *args: Any, **kwargs: Any) -> Any:
    """Call ``fn(*args, **kwargs)``, retrying throttling and transient failures (SPEC P3).

    Keyword-only controls (removed before calling ``fn``): ``deadline`` (a ``Clock.now()`` value after which
    no retry is started; default: 120 s from now), ``idempotent`` (default True: 5xx and connection errors
    are retried too; set False for calls that must not be repeated after the server may have acted),
    ``clock`` and ``on_retry`` (called with (exception, delay) before each wait).
    A 429 is always retried: the server did not act on the request.
    """
    deadline = kwargs.pop("deadline", None)
    idempotent = kwargs.pop("idempotent", True)
    clock = kwargs.pop("clock", None) or clocks.SYSTEM_CLOCK
    on_retry = kwargs.pop("on_retry", None)
    if deadline is None:
        deadline = clock.now() + DEFAULT_RETRY_WINDOW_SECONDS
    attempt = 0
    while True:
        try:
            return fn(*args, **kwargs)
        except Exception as exc:  # pylint: disable=broad-except
            delay = retry_delay(exc, attempt, idempotent)
            if delay is None or clock.now() + delay > deadline:
                raise
            if on_retry is not None:
                on_retry(exc, delay)
            clock.sleep(delay)
            attempt += 1


def object_key(obj: Mapping[str, Any]) -> tuple[str, str | None]:
    """(namespace, name) of a raw object; namespace is "" for cluster-scoped objects."""
    metadata = obj.get("metadata") or {}
    return (metadata.get("namespace") or "", metadata.get("name"))


def read_body(response: Any) -> bytes:
    """The whole body of a ``_preload_content=False`` response; its connection then goes back to the pool.

    Never release such a connection unread: the pool would reuse it with the body still on the wire, and the
    next request sent on it would take those bytes for its status line. That request fails on the client
    although the server acted on it (an accepted eviction looks like a dropped connection and is sent again).
    """
    try:
        return response.data
    finally:
        response.release_conn()


def status_body(body: dict[str, Any] | str | bytes | None, text_as_message: bool = True) -> dict[str, Any]:
    """An API error's body (bytes, text or already parsed) as a dict: the Status object the API server sends, {}
    when there is none, and when it is not JSON (a proxy's HTML page) {"message": body}, or {} without
    ``text_as_message``."""
    if isinstance(body, dict):
        return body
    if isinstance(body, bytes):
        body = body.decode("utf-8", "replace")
    try:
        parsed = json.loads(body) if body else {}
    except ValueError:
        return {"message": body} if text_as_message else {}
    return parsed if isinstance(parsed, dict) else {}


def read_json(response: Any) -> Any:
    """The JSON body of a ``_preload_content=False`` response ({} when empty), read as ``read_body`` does."""
    data = read_body(response)
    return json.loads(data) if data else {}


def list_all(list_func: Callable[..., Any], deadline: float | None = None, clock: Clock | None = None, page_size: int = LIST_PAGE_SIZE,
             **list_kwargs: Any) -> tuple[list[dict[str, Any]], str | None]:
    """LIST every page (limit/continue). Returns (items as raw dicts, the list's resourceVersion)."""
    items = []
    continue_token = None
    while True:
        page_kwargs = dict(list_kwargs, limit=page_size, _preload_content=False)
        if continue_token:
            page_kwargs["_continue"] = continue_token
        body = read_json(retry_api_call(list_func, deadline=deadline, clock=clock, **page_kwargs))
        items.extend(body.get("items") or [])
        metadata = body.get("metadata") or {}
        continue_token = metadata.get("continue")
        if not continue_token:
            return items, metadata.get("resourceVersion")


class Waker:
    """Lets another thread make a blocked ``list_then_watch`` re-check its condition now.

    ``wake()`` marks the waker and shuts down the watch response the loop is reading, so the loop returns
    from its blocking read, calls ``condition`` and, if needed, resumes watching from where it was.
    """

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._woken = False
        self._response = None

    def wake(self) -> None:
        with self._lock:
            self._woken = True
            response = self._response
        if response is not None:
            _shutdown(response)

    def attach(self, response: Any) -> None:
        with self._lock:
            self._response = response
            woken = self._woken
        if woken:
            _shutdown(response)

    def detach(self) -> None:
        with self._lock:
            self._response = None

    def consume(self) -> bool:
        """Whether wake() was called since the last consume()."""
        with self._lock:
            woken, self._woken = self._woken, False
        return woken


def _shutdown(response: Any) -> None:
    shutdown = getattr(response, "shutdown", None)
    try:
        if shutdown is not None:
            shutdown()
        else:
            response.close()
    except Exception:  # pylint: disable=broad-except
        pass  # the stream is being abandoned either way


def _iter_lines(response: Any) -> Iterator[bytes]:
    buffer = b""
    for chunk in response.stream(amt=None, decode_content=True):
        buffer += chunk if isinstance(chunk, bytes) else chunk.encode("utf-8")
        while b"\n" in buffer:
            line, buffer = buffer.split(b"\n", 1)
            if line.strip():
                yield line


class _WatchGone(Exception):
    """The watch's resourceVersion is too old (410): re-list."""


class _WatchError(Exception):
    def __init__(self, status: int | None, message: str | None, retry_after: float | None = None) -> None:
        super(_WatchError, self).__init__("watch error %s: %s" % (status, message))
        self.status = status
        self.retry_after = retry_after


def apply_watch_event(objects: dict[tuple[str, str | None], dict[str, Any]], event: Mapping[str, Any]) -> str | None:
    """Apply one decoded watch event to ``objects``; returns the event's resourceVersion (or None).

    Raises _WatchGone for an ERROR event with code 410 and _WatchError for other ERROR events.
    """
    event_type = event.get("type")
    obj = event.get("object") or {}
    if event_type == "ERROR":
        code = obj.get("code")
        if code == HTTP_GONE:
            raise _WatchGone()
        raise _WatchError(code, obj.get("message"), retry_after=(obj.get("details") or {}).get("retryAfterSeconds"))
    resource_version = (obj.get("metadata") or {}).get("resourceVersion")
    if event_type in ("ADDED", "MODIFIED"):
        objects[object_key(obj)] = obj
    elif event_type == "DELETED":
        objects.pop(object_key(obj), None)
    return resource_version


def list_then_watch(list_func: Callable[..., Any], **kwargs: Any) -> tuple[bool, dict[tuple[str, str | None], dict[str, Any]]]:
    """LIST, then WATCH from the list's resourceVersion until ``condition(objects)`` holds or time runs out.

    Keyword arguments: ``timeout`` (seconds, required), ``condition`` (required; called with the dict of
    raw objects keyed by (namespace, name) after the LIST and after every event or wake-up; it must not
    mutate the dict), ``listed`` (optional (items, resourceVersion) from a LIST the caller already made, to
    avoid a second one), ``waker`` (optional Waker), ``clock``; every other keyword goes to ``list_func``
    (label_selector, field_selector, namespace for namespaced list functions, ...).

    Returns (True, objects) once the condition holds, (False, objects) at the timeout. Handles 410 Gone by
    re-listing, reconnects when the server ends the stream, and backs off (Retry-After honoured) on 429/5xx.
    """
    timeout = kwargs.pop("timeout")
    condition = kwargs.pop("condition")
    listed = kwargs.pop("listed", None)
    waker = kwargs.pop("waker", None)
    clock = kwargs.pop("clock", None) or clocks.SYSTEM_CLOCK
    deadline = clock.now() + timeout

    def relist() -> tuple[dict[tuple[str, str | None], dict[str, Any]], str | None]:
        items, version = list_all(list_func, deadline=deadline, clock=clock, **kwargs)
        return dict((object_key(item), item) for item in items), version

    if listed is None:
        objects, resource_version = relist()
    else:
        objects = dict((object_key(item), item) for item in listed[0])
        resource_version = listed[1]
    failures = 0
    while True:
        if waker is not None:
            waker.consume()
        if condition(objects):
            return True, objects
        remaining = deadline - clock.now()
        if remaining <= 0:
            return False, objects
        started = clock.now()
        try:
            resource_version, events = _watch_once(list_func, kwargs, objects, resource_version, deadline,
                                                   condition, waker, clock)
            if events or clock.now() - started >= 1.0:
                failures = 0
            else:
                # A stream that ends at once without events must not turn into a request loop.
                clock.sleep(min(backoff_delay(failures), max(0.0, deadline - clock.now())))
                failures += 1
        except _WatchGone:
            objects, resource_version = relist()
        except Exception as exc:  # pylint: disable=broad-except
            if waker is not None and waker.consume():
                continue  # the stream was shut down on purpose
            delay = _watch_retry_delay(exc, failures)
            if delay is None:
                raise
            failures += 1
            clock.sleep(min(delay, max(0.0, deadline - clock.now())))


def _watch_retry_delay(exc: BaseException, failures: int) -> float | None:
    if isinstance(exc, _WatchError):
        if exc.status == HTTP_TOO_MANY_REQUESTS or exc.status in RETRYABLE_SERVER_ERRORS:
            if exc.retry_after:
                return jittered(float(exc.retry_after))
            return backoff_delay(failures)
        return None
    if isinstance(exc, api_exception()) and exc.status == HTTP_GONE:
        return 0.0
    # A dropped connection or read timeout is retried like an idempotent call.
    return retry_delay(exc, failures, idempotent=True)


def _watch_once(list_func: Callable[..., Any], list_kwargs: Mapping[str, Any], objects: dict[tuple[str, str | None], dict[str, Any]],
                resource_version: str | None, deadline: float, condition: Callable[[dict[tuple[str, str | None], dict[str, Any]]], object],
                waker: Waker | None, clock: Clock) -> tuple[str | None, int]:
    """One WATCH request; returns (last resourceVersion seen, number of events) when the condition holds,
    the deadline passes or the stream ends."""
    remaining = deadline - clock.now()
    window = int(max(1, min(WATCH_WINDOW_SECONDS, remaining + 1)))
    watch_kwargs = dict(list_kwargs, watch=True, allow_watch_bookmarks=True, timeout_seconds=window,
                        _preload_content=False,
                        _request_timeout=(CONNECT_TIMEOUT_SECONDS, window + WATCH_READ_SLACK_SECONDS))
    if resource_version:
        watch_kwargs["resource_version"] = resource_version
    try:
        response = list_func(**watch_kwargs)
    except api_exception() as exc:
        if exc.status == HTTP_GONE:
            raise _WatchGone()
        raise
    if waker is not None:
        waker.attach(response)
    # Our own deadline ends the stream (P1): the server's timeoutSeconds is whole seconds past it, and the stream is
    # read only when an event comes, a bookmark perhaps a minute away (issue 11: a post-drain wait of 1 s took up to 2).
    ended = threading.Event()

    def end() -> None:
        ended.set()
        _shutdown(response)

    timer = threading.Timer(max(0.0, deadline - clock.now()), end)
    timer.daemon = True
    timer.start()
    events = 0
    try:
        for line in _iter_lines(response):
            try:
                event = json.loads(line)
            except ValueError:
                continue
            events += 1
            version = apply_watch_event(objects, event)
            if version:
                resource_version = version
            if event.get("type") != "BOOKMARK" and condition(objects):
                break
            if clock.now() >= deadline:
                break
            if waker is not None and waker.consume():
                if condition(objects):
                    break
    except TRANSPORT_ERRORS:
        if not ended.is_set():
            raise
        # Shut down at the deadline, mid-read: the watch ended as asked.
    finally:
        timer.cancel()
        if waker is not None:
            waker.detach()
        response.close()
        response.release_conn()
    return resource_version, events
