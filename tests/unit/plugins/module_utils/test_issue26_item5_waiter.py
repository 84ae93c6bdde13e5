# -*- coding: utf-8 -*-
# Copyright: Contributors to the eksops.nodegroup project
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Issue 26 item 5: one waiter shape with named predicates (host/waiter.py) and one clock (host/clock.py).

The intervals are those docs/architecture.md ("Waits are watches") documents and SPEC W4 asks for: AWS polled at most
once a second, backing off; a wait makes no destructive call and unwinds on a stopped job (SPEC W5)."""

from __future__ import annotations

import ast
import datetime
import pathlib
import threading
import time

import pytest

from ansible_collections.eksops.nodegroup.plugins.module_utils.errors import WAIT_TIMEOUT, UpgradeError
from ansible_collections.eksops.nodegroup.plugins.module_utils.host import clock as clocks
from ansible_collections.eksops.nodegroup.plugins.module_utils.host.job_guard import JobStopped
from ansible_collections.eksops.nodegroup.plugins.module_utils.host.waiter import Backoff, Waiter
from ansible_collections.eksops.nodegroup.plugins.module_utils.managed.update import update_finished
from ansible_collections.eksops.nodegroup.plugins.module_utils.nodegroup import termination

from ..fakes import FakeClock, FakeStore

MODULE_UTILS = pathlib.Path(__file__).resolve().parents[4] / "plugins" / "module_utils"


def first(delays, count):
    return [next(delays) for _index in range(count)]


def test_item5_the_backoffs_the_architecture_documents():
    """EC2 during a termination 1 s to 2 s, the group 1 s to 5 s, load balancers 1 s x1.5 to 5 s, EKS's update every
    poll_interval."""
    assert first(Backoff(termination.EC2_FIRST_POLL_SECONDS, termination.EC2_POLL_SECONDS).delays(), 4) == [1, 2, 2, 2]
    assert first(Backoff(1.0, 5.0).delays(), 5) == [1, 2, 4, 5, 5]
    assert first(Backoff(1.0, 5.0, 1.5).delays(), 6) == [1, 1.5, 2.25, 3.375, 5, 5]
    assert first(Backoff.every(15).delays(), 3) == [15, 15, 15]
    assert first(Backoff(3.0, 2.0).delays(), 2) == [2, 2]  # the first pause is never above the cap


def reads(*answers):
    answers = list(answers)
    return lambda: answers.pop(0)


def test_item5_a_poll_returns_what_it_saw_once_the_named_predicate_holds():
    clock = FakeClock()
    waiter = Waiter(update_finished, 60, clock)
    held, seen = waiter.poll(reads(dict(status="InProgress"), dict(status="Successful")), Backoff(1.0, 5.0),
                             seen=dict(status="InProgress"))
    assert held and seen == dict(status="Successful") and clock.sleeps == [1.0, 2.0]


def test_item5_a_poll_never_sleeps_past_its_deadline_and_says_it_did_not_hold():
    clock = FakeClock()
    waiter = Waiter(termination.instances_gone, 10, clock)
    held, seen = waiter.poll(lambda: ["i-1"], Backoff(1.0, 5.0))
    assert not held and seen == ["i-1"] and clock.sleeps == [1, 2, 4, 3] and clock.now() == waiter.deadline


def test_item5_at_its_deadline_a_poll_raises_the_callers_error():
    clock = FakeClock()
    waiter = Waiter(termination.instances_gone, 3, clock)
    with pytest.raises(UpgradeError) as raised:
        waiter.poll(lambda: ["i-1"], Backoff.every(2), on_timeout=lambda seen: UpgradeError(
            WAIT_TIMEOUT, "%s not terminated" % ", ".join(seen)))
    assert (raised.value.code, raised.value.msg) == (WAIT_TIMEOUT, "i-1 not terminated") and clock.sleeps == [2, 1]


def test_item5_pace_stretches_a_pause_and_extend_moves_the_deadline_later_only():
    clock = FakeClock()
    waiter = Waiter(termination.instances_gone, 4, clock)
    waiter.extend(waiter.deadline - 2)
    waiter.extend(waiter.deadline + 6)
    held, _seen = waiter.poll(lambda: ["i-1"], Backoff(1.0, 2.0), pace=lambda seen: 5.0)
    assert not held and clock.sleeps == [5.0, 5.0]


def test_item5_a_stopped_job_unwinds_a_wait():
    """SPEC W5: the waiter catches nothing; JobStopped, raised where the wait reads or sleeps, comes out of it."""
    clock = FakeClock()

    def read():
        raise JobStopped("the task received SIGTERM")

    with pytest.raises(JobStopped):
        Waiter(termination.instances_gone, 600, clock).poll(read, Backoff(1.0, 2.0), seen=["i-1"])
    assert clock.sleeps == [1.0]


def pod(name):
    return {"metadata": {"name": name, "namespace": "default", "uid": "uid-" + name}, "spec": {"nodeName": "n"}}


def test_item5_a_watch_judges_the_predicate_on_its_view_of_the_objects():
    store = FakeStore([pod("a"), pod("b")])
    timer = threading.Timer(0.1, store.delete, (("default", "a"),))
    timer.start()
    held, objects = Waiter(lambda names: names == ["b"], 5).list_then_watch(
        store.list_func, lambda objects: sorted(name for _namespace, name in objects))
    timer.join()
    assert held and list(objects) == [("default", "b")] and store.kinds() == ["list", "watch"]


def test_item5_a_watch_ends_when_a_source_beside_it_failed():
    store = FakeStore([pod("a")])
    started = time.monotonic()
    held, _objects = Waiter(lambda objects: False, 5).list_then_watch(store.list_func, dict, interrupted=lambda: True)
    assert not held and time.monotonic() - started < 1 and store.kinds() == ["list"]


def test_item5_the_one_clock():
    assert isinstance(clocks.SYSTEM_CLOCK, clocks.Clock)
    before = clocks.SYSTEM_CLOCK.now()
    clocks.SYSTEM_CLOCK.sleep(-1)
    assert 0 <= clocks.SYSTEM_CLOCK.now() - before < 0.5
    assert abs(clocks.SYSTEM_CLOCK.time() - time.time()) < 1
    moment = datetime.datetime(2026, 1, 2, 3, 4, 5, tzinfo=datetime.timezone.utc)
    assert clocks.utc_now_iso(moment) == "2026-01-02T03:04:05Z" and clocks.parse_utc_iso("2026-01-02T03:04:05Z") == moment
    assert clocks.clock_time(moment.timestamp()) == "03:04:05Z"
    assert (clocks.utc_now() - datetime.datetime.now(datetime.timezone.utc)).total_seconds() < 1


TIME_HELPERS = frozenset(["Clock", "SYSTEM_CLOCK", "utc_now", "_utc", "utc_now_iso", "parse_utc_iso", "clock_time"])


def defined_names(tree):
    names = set()
    for node in tree.body:
        if isinstance(node, (ast.FunctionDef, ast.ClassDef)):
            names.add(node.name)
        elif isinstance(node, ast.Assign):
            names.update(target.id for target in node.targets if isinstance(target, ast.Name))
    return names


def test_item5_the_time_helpers_are_defined_once_in_the_clock():
    """Before: kube/watch.py Clock and SYSTEM_CLOCK, asg_state.utc_now, lease._utc, journal.utc_now_iso and
    parse_utc_iso, loop.clock_time."""
    where = {}
    for path in MODULE_UTILS.rglob("*.py"):
        for name in defined_names(ast.parse(path.read_text())) & TIME_HELPERS:
            where.setdefault(name, []).append(path.relative_to(MODULE_UTILS).as_posix())
    assert where == dict((name, ["host/clock.py"]) for name in TIME_HELPERS - {"_utc"})


def sleeps_in_loops(tree):
    """Lines of ``sleep(...)`` calls inside a while or for loop: a wait loop of its own."""
    found = []
    for loop in ast.walk(tree):
        if isinstance(loop, (ast.While, ast.For)):
            found.extend(node.lineno for node in ast.walk(loop) if isinstance(node, ast.Call)
                         and isinstance(node.func, ast.Attribute) and node.func.attr == "sleep")
    return sorted(set(found))


def test_item5_the_waits_sleep_only_in_the_one_wait_loop():
    """The termination wait, EKS's update, the group watch and the post-drain wait have no sleep loop of their own:
    they poll or watch through the Waiter."""
    for name in ("nodegroup/termination.py", "steps/eks_nodegroup_update.py", "members/group_watch.py",
                 "_drain/post_drain.py", "steps/asg_surge.py", "steps/asg_instance_terminate.py"):
        assert sleeps_in_loops(ast.parse((MODULE_UTILS / name).read_text())) == [], name
    assert sleeps_in_loops(ast.parse((MODULE_UTILS / "host/waiter.py").read_text())) != []
