# -*- coding: utf-8 -*-
# Copyright: Contributors to the eksops.nodegroup project
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""kube_watch: paged LIST, LIST-then-WATCH (SPEC P1), retries (P3). No server: FakeStore (../fakes.py) plays the API."""

from __future__ import annotations

import threading
import time

import pytest
from kubernetes.client.exceptions import ApiException

from ansible_collections.eksops.nodegroup.plugins.module_utils.kube import watch as kube_watch
from ansible_collections.eksops.nodegroup.plugins.module_utils.kube.watch import (
    Waker,
    apply_watch_event,
    backoff_delay,
    jittered,
    list_all,
    list_then_watch,
    retry_after_seconds,
    retry_api_call,
)

from ..fakes import FakeClock, FakeStore, FakeWatchResponse, api_error


def pod(name, node="node-a", namespace="default", uid=None, labels=None):
    return {"metadata": {"name": name, "namespace": namespace, "uid": uid or "uid-" + name,
                         "labels": labels or {"app": "web"}},
            "spec": {"nodeName": node}, "status": {"phase": "Running"}}


# ----------------------------------------------------------------------------------------------------------
# Pure helpers
# ----------------------------------------------------------------------------------------------------------

@pytest.mark.parametrize("headers, expected", [
    ({"Retry-After": "7"}, 7.0),
    ({"retry-after": "2"}, 2.0),
    ({"Retry-After": "soon"}, None),
    ({}, None),
    (None, None),
])
def test_retry_after_header_parsing_P3(headers, expected):
    assert retry_after_seconds(headers) == expected


def test_backoff_is_exponential_capped_and_jittered_P3():
    for attempt in range(12):
        ceiling = min(kube_watch.BACKOFF_CAP_SECONDS, kube_watch.BACKOFF_BASE_SECONDS * 2 ** attempt)
        delays = [backoff_delay(attempt) for dummy in range(50)]
        assert all(ceiling / 2 <= d <= ceiling for d in delays)
    assert len(set(backoff_delay(5) for dummy in range(20))) > 1


def test_jitter_never_shortens_retry_after_P3():
    assert all(5.0 <= jittered(5.0) <= 6.0 for dummy in range(100))


# ----------------------------------------------------------------------------------------------------------
# retry_api_call (P3)
# ----------------------------------------------------------------------------------------------------------

def _flaky(errors, result="ok"):
    calls = []

    def call(*args, **kwargs):
        calls.append((args, kwargs))
        if errors:
            raise errors.pop(0)
        return result
    return call, calls


def test_retry_honours_retry_after_on_429_P3():
    clock = FakeClock()
    fn, calls = _flaky([api_error(429, retry_after=3), api_error(429, retry_after=3)])
    assert retry_api_call(fn, "node-a", clock=clock, body={"x": 1}) == "ok"
    assert len(calls) == 3 and calls[0] == (("node-a",), {"body": {"x": 1}})
    assert all(3.0 <= s <= 3.6 for s in clock.sleeps)


def test_retry_429_even_for_non_idempotent_calls_P3():
    clock = FakeClock()
    fn, calls = _flaky([api_error(429)])
    assert retry_api_call(fn, clock=clock, idempotent=False) == "ok"
    assert len(calls) == 2


@pytest.mark.parametrize("status", [500, 502, 503, 504])
def test_retry_5xx_only_when_idempotent_P3(status):
    clock = FakeClock()
    fn, calls = _flaky([api_error(status)])
    assert retry_api_call(fn, clock=clock) == "ok"
    fn, calls = _flaky([api_error(status)])
    with pytest.raises(ApiException):
        retry_api_call(fn, clock=clock, idempotent=False)
    assert len(calls) == 1


@pytest.mark.parametrize("status", [400, 401, 403, 404, 409, 422])
def test_client_errors_are_not_retried_P3(status):
    fn, calls = _flaky([api_error(status)])
    with pytest.raises(ApiException):
        retry_api_call(fn, clock=FakeClock())
    assert len(calls) == 1


def test_connection_errors_retried_for_idempotent_calls_P3():
    fn, calls = _flaky([ConnectionResetError("reset")])
    assert retry_api_call(fn, clock=FakeClock()) == "ok"
    assert len(calls) == 2


def test_retries_stop_at_the_deadline_P3():
    clock = FakeClock()
    fn, calls = _flaky([api_error(429, retry_after=10)] * 5)
    with pytest.raises(ApiException):
        retry_api_call(fn, clock=clock, deadline=clock.now() + 25)
    assert len(calls) == 3  # waits of >= 10 s: the third failure would end past the deadline
    assert clock.now() <= 1025


# ----------------------------------------------------------------------------------------------------------
# list_all (D2, P2)
# ----------------------------------------------------------------------------------------------------------

def test_list_all_pages_with_limit_and_continue_D2():
    store = FakeStore([pod("p%d" % i) for i in range(5)] + [pod("other", node="node-b")])
    items, version = list_all(store.list_func, page_size=2, field_selector="spec.nodeName=node-a")
    assert [i["metadata"]["name"] for i in items] == ["p0", "p1", "p2", "p3", "p4"]
    assert version == str(store.version)
    assert [kw.get("_continue") for dummy, kw in store.calls] == [None, "2", "4"]
    assert all(kw["limit"] == 2 and kw["field_selector"] == "spec.nodeName=node-a" for dummy, kw in store.calls)


def test_list_all_retries_a_throttled_page_P3():
    store = FakeStore([pod("p0")])
    store.faults["list"].append(api_error(429, retry_after=0))
    items, _version = list_all(store.list_func, clock=FakeClock())
    assert len(items) == 1 and store.kinds() == ["list", "list"]


# ----------------------------------------------------------------------------------------------------------
# apply_watch_event
# ----------------------------------------------------------------------------------------------------------

def test_watch_events_update_the_object_map_P1():
    objects = {}
    assert apply_watch_event(objects, {"type": "ADDED", "object": pod("a")}) is None
    added = pod("a")
    added["metadata"]["resourceVersion"] = "7"
    assert apply_watch_event(objects, {"type": "MODIFIED", "object": added}) == "7"
    assert objects[("default", "a")]["metadata"]["resourceVersion"] == "7"
    bookmark = {"type": "BOOKMARK", "object": {"metadata": {"resourceVersion": "9"}}}
    assert apply_watch_event(objects, bookmark) == "9" and list(objects) == [("default", "a")]
    apply_watch_event(objects, {"type": "DELETED", "object": pod("a")})
    assert objects == {}


def test_watch_error_events_P1():
    with pytest.raises(kube_watch._WatchGone):
        apply_watch_event({}, {"type": "ERROR", "object": {"code": 410}})
    with pytest.raises(kube_watch._WatchError) as info:
        apply_watch_event({}, {"type": "ERROR", "object": {"code": 429, "message": "slow down",
                                                           "details": {"retryAfterSeconds": 2}}})
    assert info.value.status == 429 and info.value.retry_after == 2


# ----------------------------------------------------------------------------------------------------------
# list_then_watch (P1)
# ----------------------------------------------------------------------------------------------------------

def _gone(name):
    return lambda objects: ("default", name) not in objects


def _later(seconds, fn, *args):
    timer = threading.Timer(seconds, fn, args)
    timer.daemon = True
    timer.start()
    return timer


def test_condition_true_after_list_makes_no_watch_P1():
    store = FakeStore([pod("a")])
    ok, objects = list_then_watch(store.list_func, timeout=5, condition=lambda objs: len(objs) == 1)
    assert ok and list(objects) == [("default", "a")]
    assert store.kinds() == ["list"]


def test_watch_starts_from_the_list_resource_version_P1():
    store = FakeStore([pod("a"), pod("b")])
    _later(0.1, store.delete, ("default", "a"))
    ok, objects = list_then_watch(store.list_func, timeout=5, condition=_gone("a"),
                                  field_selector="spec.nodeName=node-a")
    assert ok and list(objects) == [("default", "b")]
    (dummy, list_kwargs), (dummy, watch_kwargs) = store.calls
    assert watch_kwargs["resource_version"] == "102"
    assert watch_kwargs["allow_watch_bookmarks"] is True
    assert watch_kwargs["field_selector"] == "spec.nodeName=node-a"
    assert isinstance(watch_kwargs["timeout_seconds"], int)


def test_listed_snapshot_skips_the_list_P1():
    store = FakeStore([pod("a")])
    items, version = list_all(store.list_func)
    store.calls.clear()
    _later(0.1, store.delete, ("default", "a"))
    ok, _objects = list_then_watch(store.list_func, timeout=5, condition=_gone("a"), listed=(items, version))
    assert ok and store.kinds() == ["watch"]


def test_timeout_returns_false_with_current_objects_P1():
    store = FakeStore([pod("a")])
    started = time.monotonic()
    ok, objects = list_then_watch(store.list_func, timeout=0.5, condition=_gone("a"))
    assert not ok and ("default", "a") in objects
    assert 0.4 <= time.monotonic() - started < 3


def test_the_watch_ends_at_our_deadline_not_at_the_servers_timeout_P1():
    """timeoutSeconds is whole seconds and at least one: a 0.3 s wait would last until the server ended the stream
    (issue 11: post-drain waits up to a second long). Our deadline shuts the stream down mid-read instead."""
    store = FakeStore([pod("a")])
    ok, objects = list_then_watch(store.list_func, timeout=0.3, condition=_gone("a"))
    assert not ok and ("default", "a") in objects
    assert [response.shut_down for response in store.watch_responses] == [True]


def test_410_on_the_watch_request_relists_P1():
    store = FakeStore([pod("a")])
    store.gone_before = 10 ** 6
    _later(0.2, setattr, store, "gone_before", 0)
    _later(0.3, store.delete, ("default", "a"))
    ok, _objects = list_then_watch(store.list_func, timeout=5, condition=_gone("a"))
    assert ok
    kinds = store.kinds()
    assert kinds[:2] == ["list", "watch"] and kinds.count("list") >= 2


def test_410_error_event_relists_and_rewatches_P1():
    store = FakeStore([pod("a")])
    store.watch_preludes.append([{"type": "ERROR", "object": {"kind": "Status", "code": 410}}])
    _later(0.2, store.delete, ("default", "a"))
    ok, _objects = list_then_watch(store.list_func, timeout=5, condition=_gone("a"))
    assert ok
    assert store.kinds()[:4] == ["list", "watch", "list", "watch"]


def test_reconnects_from_last_version_when_the_server_closes_the_stream_P1():
    store = FakeStore([pod("a"), pod("b")])
    _later(0.1, store.delete, ("default", "b"))

    def drop():
        store.drop_streams = True
        time.sleep(0.1)
        store.drop_streams = False
    _later(0.3, drop)
    _later(0.6, store.delete, ("default", "a"))
    ok, objects = list_then_watch(store.list_func, timeout=5, condition=lambda objs: not objs)
    assert ok
    watches = [kw for kind, kw in store.calls if kind == "watch"]
    assert len(watches) >= 2
    assert int(watches[-1]["resource_version"]) >= 103  # resumed after the deletion of b, not from the list


def test_throttled_watch_backs_off_honouring_retry_after_P1_P3():
    store = FakeStore([pod("a")])
    store.faults["watch"].append(api_error(429, retry_after=0.3))
    _later(0.1, store.delete, ("default", "a"))
    started = time.monotonic()
    ok, _objects = list_then_watch(store.list_func, timeout=5, condition=_gone("a"))
    assert ok and time.monotonic() - started >= 0.3
    assert store.kinds() == ["list", "watch", "watch"]


def test_forbidden_watch_raises():
    store = FakeStore([pod("a")])
    store.faults["watch"].append(api_error(403))
    with pytest.raises(ApiException):
        list_then_watch(store.list_func, timeout=5, condition=_gone("a"))


def test_waker_makes_a_blocked_watch_recheck_its_condition_P1():
    store = FakeStore([pod("a")])
    flag = threading.Event()
    waker = Waker()
    _later(0.2, flag.set)
    _later(0.25, waker.wake)
    started = time.monotonic()
    ok, _objects = list_then_watch(store.list_func, timeout=10, condition=lambda objs: flag.is_set(),
                                   waker=waker)
    assert ok and time.monotonic() - started < 2
    assert store.watch_responses[0].closed


def test_a_wake_before_the_watch_starts_is_not_lost_P1():
    waker = Waker()
    waker.wake()
    response = FakeWatchResponse(FakeStore(), 0, lambda obj: True, 10)
    waker.attach(response)
    assert response.closed and waker.consume() and not waker.consume()


def test_throttled_watch_error_event_backs_off_and_resumes_P1_P3():
    store = FakeStore([pod("a")])
    store.watch_preludes.append([{"type": "ERROR", "object": {"kind": "Status", "code": 429, "message": "slow",
                                                              "details": {"retryAfterSeconds": 0.3}}}])
    _later(0.1, store.delete, ("default", "a"))
    started = time.monotonic()
    ok, _objects = list_then_watch(store.list_func, timeout=5, condition=_gone("a"))
    assert ok and time.monotonic() - started >= 0.3
    assert store.kinds() == ["list", "watch", "watch"]


@pytest.mark.parametrize("body, text_as_message, expected", [
    (b'{"kind": "Status", "message": "Too many requests"}', True, {"kind": "Status", "message": "Too many requests"}),
    ('{"message": "m"}', False, {"message": "m"}),
    ({"message": "parsed"}, True, {"message": "parsed"}),
    ("<html>502 Bad Gateway</html>", True, {"message": "<html>502 Bad Gateway</html>"}),
    (b"<html>502 Bad Gateway</html>", False, {}),
    ("[1, 2]", True, {}),
    (None, True, {}),
])
def test_status_body_reads_what_the_api_server_or_a_proxy_sent(body, text_as_message, expected):
    """Issue 12: the one reader of an API error's body, for eviction outcomes (D13) and error messages (U8)."""
    assert kube_watch.status_body(body, text_as_message=text_as_message) == expected
