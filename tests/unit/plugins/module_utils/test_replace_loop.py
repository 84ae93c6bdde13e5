# -*- coding: utf-8 -*-
# Copyright: Contributors to the eksops.nodegroup project
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""The upgrade phase's batch loop (module_utils/phases/replace/loop.py, issue 11 item 4; SPEC U5, U7) with fake steps."""

from __future__ import annotations

import threading
from types import SimpleNamespace

import pytest

from ansible_collections.eksops.nodegroup.plugins.module_utils.host import job_guard
from ansible_collections.eksops.nodegroup.plugins.module_utils.errors import UpgradeError
from ansible_collections.eksops.nodegroup.plugins.module_utils.phases.replace.batch_safe_point import (
    BatchSafePoint,
    expected_seconds,
    gated_batches,
)
from ansible_collections.eksops.nodegroup.plugins.module_utils.phases.replace.loop import (
    Batch,
    Drained,
    ReplaceFailed,
    ReplaceLoop,
    ReplaceState,
    StepFailed,
    planned_batches,
    planned_steps,
)


class Handle:
    def __init__(self, batch, never_joined=()):
        self.batch = batch
        self.never_joined = list(never_joined)
        self.availability_zones, self.group_per_az = {}, {}
        self.replacements, self.retained_instances = [], []


class Steps:
    """Records the order of events; ``gate`` holds a batch's termination wait until released."""

    def __init__(self, fail=None, never_joined=None, hold_finish=False):
        self.events = []
        self.lock = threading.Lock()
        self.fail = fail or {}
        self.never_joined = never_joined or {}
        self.gates = {}
        self.hold_finish = hold_finish

    def note(self, event):
        with self.lock:
            self.events.append(event)

    def drain(self, batch):
        key = batch.instance_ids[0]
        self.note(("drain", key))
        if self.fail.get(("drain", key)):
            raise StepFailed(UpgradeError("PodEvictionFailure", "blocked", pods=["default/web"]),
                             dict(drain=dict(nodes={"node-" + key: dict(error="blocked")})))
        return Drained(nodes=dict(("node-" + i, dict(evicted=[])) for i in batch.instance_ids),
                       instances=dict((i, "node-" + i) for i in batch.instance_ids))

    def start(self, batch):
        key = batch.instance_ids[0]
        self.note(("start", key, batch.decrement))
        self.gates[key] = threading.Event()
        if not self.hold_finish:
            self.gates[key].set()
        return Handle(batch, self.never_joined.get(key, ()))

    def finish(self, handle):
        key = handle.batch.instance_ids[0]
        self.gates[key].wait(5)
        self.note(("gone", key))
        if self.fail.get(("finish", key)):
            raise StepFailed(UpgradeError("InstanceTerminationTimeout", "still there", instance_ids=[key]))
        return handle


def make_loop(steps, overlap=True, lines=None, total=None):
    clock = iter(range(1000, 2000))
    return ReplaceLoop(steps.drain, steps.start, steps.finish, (lines if lines is not None else []).append,
                       overlap=overlap, node_names={"i-1": "node-i-1"}, total=total, clock=lambda: next(clock))


def test_planned_batches_answers_the_plan_batch_by_batch_then_none():
    loop = make_loop(Steps())
    state = loop.run(planned_batches([["i-1", "i-2"], ["i-3"]]))
    assert state.replaced_instances == ["i-1", "i-2", "i-3"]
    assert [b["instance_ids"] for b in state.batches] == [["i-1", "i-2"], ["i-3"]]
    assert set(state.drained_nodes) == {"node-i-1", "node-i-2", "node-i-3"}


def test_without_overlap_each_batch_is_gone_before_the_next_drains():
    steps = Steps()
    make_loop(steps, overlap=False).run(planned_batches([["i-1"], ["i-2"]]))
    assert steps.events == [("drain", "i-1"), ("start", "i-1", False), ("gone", "i-1"),
                            ("drain", "i-2"), ("start", "i-2", False), ("gone", "i-2")]


def test_with_overlap_the_next_drain_starts_before_the_previous_instances_are_gone():
    steps = Steps(hold_finish=True)
    loop = make_loop(steps)

    def drain_then_release(batch, drain=steps.drain):
        result = drain(batch)
        if batch.instance_ids == ["i-2"]:
            # batch 1's wait is still under way while batch 2 drains; let it end now
            assert ("gone", "i-1") not in steps.events
            steps.gates["i-1"].set()
        return result

    def start_released(batch, start=steps.start):
        handle = start(batch)
        if batch.instance_ids == ["i-2"]:
            steps.gates["i-2"].set()
        return handle

    loop.drain, loop.start = drain_then_release, start_released
    loop.run(planned_batches([["i-1"], ["i-2"]]))
    # batch 1's instances are gone before batch 2's termination starts: one termination wait at a time
    assert steps.events.index(("drain", "i-2")) < steps.events.index(("gone", "i-1")) \
        < steps.events.index(("start", "i-2", False)) < steps.events.index(("gone", "i-2"))


def test_progress_lines_start_and_end_each_batch_in_order():
    lines = []
    make_loop(Steps(), lines=lines, total=2).run(planned_batches([["i-1"], ["i-2"]]))
    starts = [n for n, line in enumerate(lines) if " started at " in line]
    ends = [n for n, line in enumerate(lines) if " ended at " in line]
    assert len(starts) == len(ends) == 2
    assert starts[0] < ends[0] < starts[1] < ends[1]
    assert lines[starts[0]].startswith("batch 1/2 started at ") and "node-i-1 (i-1)" in lines[starts[0]]
    assert "drained node-i-2" in lines[ends[1]] and "i-2" in lines[ends[1]]
    assert any(line.startswith("batch 2/2: instances i-2 gone at ") for line in lines)


def test_s3_surge_steps_launch_first_every_termination_decrements_and_a_launch_only_step_terminates_nothing():
    steps, launches, lines = Steps(), [], []

    def launch_then_drain(batch, drain=steps.drain):
        launches.append((batch.desired_capacity, batch.launch))
        return drain(batch) if batch.instance_ids else Drained({}, {})

    loop = ReplaceLoop(launch_then_drain, steps.start, steps.finish, lines.append, overlap=True, total=2,
                       noun="step")
    state = loop.run(planned_steps([dict(desired_capacity=4, launch=1, instance_ids=["i-1", "i-2"], step=1),
                                    dict(desired_capacity=3, launch=1, instance_ids=[], step=2)],
                                   choose_after_launch=False))
    assert launches == [(4, 1), (3, 1)]
    assert steps.events == [("drain", "i-1"), ("start", "i-1", True), ("gone", "i-1")]
    assert state.replaced_instances == ["i-1", "i-2"] and [b["batch"] for b in state.batches] == [1, 2]
    assert lines[0].startswith("step 1/2 started at ") and "(i-1, i-2)" in lines[0]
    assert [line for line in lines if line.startswith("step 2/2 ")] == [
        line for line in lines if line.startswith("step 2/2 started at ") and line.endswith("no old node, new nodes only")
        or line.startswith("step 2/2 ended at ")]
    assert state.to_dict()["decrements"] == 2


def test_issue26_item2_a_surge_step_takes_its_old_instances_once_its_launch_is_placed():
    """The step's old instances are not the plan's: its drain step takes them once its launch is placed (issue 26
    item 2, SPEC S3), from the plan's old instances no step has replaced yet; its record, its lines and its
    terminations (each lowering the desired capacity) are those it took."""
    steps, lines, offered = Steps(), [], []

    def launch_then_take(batch, drain=steps.drain):
        choice = batch.choose_old
        offered.append(dict(choice))
        # As the group after the launch would choose: here the last candidates.
        batch.take(choice["candidates"][-choice["count"]:] if choice["count"] else [])
        return drain(batch) if batch.instance_ids else Drained({}, {})

    loop = ReplaceLoop(launch_then_take, steps.start, steps.finish, lines.append, overlap=True, total=3,
                       noun="step")
    state = loop.run(planned_steps([dict(desired_capacity=8, launch=2, instance_ids=["i-1", "i-2", "i-3"]),
                                    dict(desired_capacity=8, launch=3, instance_ids=["i-4", "i-5", "i-6"]),
                                    dict(desired_capacity=6, launch=1, instance_ids=[])]))
    assert offered == [
        dict(candidates=["i-1", "i-2", "i-3", "i-4", "i-5", "i-6"], count=3, end_size=6, next_launch=3),
        dict(candidates=["i-1", "i-2", "i-3"], count=3, end_size=6, next_launch=1),
        dict(candidates=[], count=0, end_size=6, next_launch=0)]
    assert state.replaced_instances == ["i-4", "i-5", "i-6", "i-1", "i-2", "i-3"]
    assert [(b["instance_ids"], b["decrement_ids"]) for b in state.batches] == [
        (["i-4", "i-5", "i-6"], ["i-4", "i-5", "i-6"]), (["i-1", "i-2", "i-3"], ["i-1", "i-2", "i-3"]), ([], [])]
    assert ("start", "i-4", True) in steps.events and ("start", "i-1", True) in steps.events
    assert lines[0].startswith("step 1/3 started at ") and lines[0].endswith("3 old node(s), chosen once the launch "
                                                                             "is placed")
    assert any(line.startswith("step 1/3 ended at ") and "i-4, i-5, i-6 (3 decrement)" in line for line in lines)
    assert state.to_dict()["decrements"] == 6


def test_never_joined_instances_are_recorded_when_auto_scaling_accepts_them():
    steps = Steps(never_joined={"i-2": [dict(instance_id="i-2", reason="never joined")]})
    state = make_loop(steps).run(planned_batches([["i-1"], ["i-2"]]))
    assert state.never_joined == [dict(instance_id="i-2", reason="never joined")]


@pytest.mark.parametrize("overlap", [True, False])
def test_retained_instances_are_recorded_when_their_wait_ends(overlap):
    """An instance Auto Scaling retained (Terminating:Retained) instead of terminating it: the termination step's
    retained_instances, batch after batch, in the loop's result."""
    class Retaining(Steps):
        def finish(self, handle):
            waited = super().finish(handle)
            waited.retained_instances = [i for i in handle.batch.instance_ids if i != "i-1"]
            return waited

    state = make_loop(Retaining(), overlap=overlap).run(planned_batches([["i-1"], ["i-2", "i-3"]]))
    assert state.retained_instances == ["i-2", "i-3"]
    assert state.to_dict()["retained_instances"] == ["i-2", "i-3"]


def test_a_drain_failure_carries_what_the_finished_batches_did_and_the_failing_step():
    steps = Steps(fail={("drain", "i-2"): True})
    with pytest.raises(ReplaceFailed) as failed:
        make_loop(steps).run(planned_batches([["i-1"], ["i-2"], ["i-3"]]))
    err = failed.value
    assert err.error.code == "PodEvictionFailure" and err.error.details == dict(pods=["default/web"])
    assert err.state.replaced_instances == ["i-1"] and set(err.state.drained_nodes) == {"node-i-1"}
    assert err.failed_step == dict(drain=dict(nodes={"node-i-2": dict(error="blocked")}))
    # batch 1's wait was joined before the loop ended; batch 3 never started
    assert ("gone", "i-1") in steps.events and ("drain", "i-3") not in steps.events


def test_a_failed_termination_wait_fails_the_loop_with_its_own_code_before_the_next_termination():
    steps = Steps(fail={("finish", "i-1"): True})
    with pytest.raises(ReplaceFailed) as failed:
        make_loop(steps).run(planned_batches([["i-1"], ["i-2"]]))
    assert failed.value.error.code == "InstanceTerminationTimeout"
    assert ("start", "i-2", False) not in steps.events  # batch 2 drained, but its instances were not terminated


def test_a_failed_termination_wait_of_the_last_batch_fails_the_loop():
    steps = Steps(fail={("finish", "i-2"): True})
    with pytest.raises(ReplaceFailed) as failed:
        make_loop(steps).run(planned_batches([["i-1"], ["i-2"]]))
    assert failed.value.error.code == "InstanceTerminationTimeout"
    assert failed.value.state.replaced_instances == ["i-1", "i-2"]


def test_next_batch_is_asked_per_batch_of_the_live_state():
    asked = []

    def next_batch(state):
        asked.append(list(state.replaced_instances))
        return Batch(["i-%d" % (len(state.batches) + 1)], decrement=True) if len(state.batches) < 2 else None

    steps = Steps()
    make_loop(steps).run(next_batch)
    assert asked == [[], ["i-1"], ["i-1", "i-2"]]
    assert ("start", "i-2", True) in steps.events  # how to terminate comes with the batch


class NoGates:
    """SafePoints with nothing to check but the time left, unbounded here; ``stop_before``: the batch numbers
    whose safe point stops the run (an UpgradePaused, as a pause request would)."""

    def __init__(self, stop_before=()):
        self.checked = []
        self.stop_before = stop_before

    def check(self, where, expected_seconds, asg=None):
        self.checked.append((where, expected_seconds))
        if int(where.split()[-1]) in self.stop_before:
            raise UpgradeError("UpgradePaused", "Paused %s" % where)


def gated(next_batch, guard_check, gates, check_mode=False, warnings=None):
    context = SimpleNamespace(check_mode=check_mode, warn=(warnings if warnings is not None else []).append)
    return gated_batches(next_batch, guard_check, BatchSafePoint(gates, context, lambda: None, lambda batch: 1560, "batch"))


def test_no_batch_starts_once_the_controller_is_gone():
    parents = iter([100, 100, 1])  # ansible-playbook (100) killed after batch 2 started: reparented to 1
    steps = Steps()
    guard = job_guard.JobGuard(100, lambda: next(parents))
    with pytest.raises(ReplaceFailed) as failed:
        make_loop(steps).run(gated(planned_batches([["i-1"], ["i-2"], ["i-3"]]), guard.check, NoGates()))
    assert failed.value.error.code == "JobStopped"
    assert "refused to start batch 3" in failed.value.error.msg
    assert failed.value.state.replaced_instances == ["i-1", "i-2"] and ("drain", "i-3") not in steps.events
    assert ("gone", "i-2") in steps.events  # the wait under way was joined


def test_issue27_a_stop_at_a_safe_point_starts_no_part_of_the_batch_and_joins_the_wait_under_way():
    """Issue 27 items 2-4: the safe point before batch 3 stops the run; batch 3 is not drained, batch 2's
    termination wait is joined, and the expected time is the longest batch so far (the bound before the first)."""
    steps = Steps()
    gates = NoGates(stop_before=(3,))
    with pytest.raises(ReplaceFailed) as failed:
        make_loop(steps).run(gated(planned_batches([["i-1"], ["i-2"], ["i-3"]]), lambda where: None, gates))
    assert failed.value.error.code == "UpgradePaused" and failed.value.failed_step == {}
    assert ("drain", "i-3") not in steps.events and ("gone", "i-2") in steps.events
    assert [where for where, _seconds in gates.checked] == ["before batch 1", "before batch 2", "before batch 3"]
    assert gates.checked[0][1] == 1560 and 0 < gates.checked[2][1] < 1560


def test_issue27_no_safe_point_after_the_last_batch_and_a_dry_run_only_warns():
    gates = NoGates(stop_before=(1, 2))
    warnings = []
    state = make_loop(Steps()).run(gated(planned_batches([["i-1"], ["i-2"]]), lambda where: None, gates,
                                         check_mode=True, warnings=warnings))
    assert state.replaced_instances == ["i-1", "i-2"] and len(gates.checked) == 2
    assert warnings == ["a run would stop here: Paused before batch 1", "a run would stop here: Paused before batch 2"]


def test_a_failed_read_of_the_live_planner_fails_the_loop_after_joining_the_wait_under_way():
    """An UpgradeError of next_batch itself (a live planner's DescribeAutoScalingGroups throttled past its retries)
    ends the loop as a step's failure does: named, with what was done, and no wait left running."""
    def next_batch(state):
        if state.batches:
            raise UpgradeError("Throttling", "DescribeAutoScalingGroups: Rate exceeded")
        return Batch(["i-1"])

    steps = Steps()
    with pytest.raises(ReplaceFailed) as failed:
        make_loop(steps).run(next_batch)
    assert failed.value.error.code == "Throttling" and failed.value.failed_step == {}
    assert failed.value.state.replaced_instances == ["i-1"] and ("gone", "i-1") in steps.events


def test_a_termination_refused_after_an_accepted_round_keeps_that_round_and_the_drain_in_what_was_done():
    """SPEC B1: a batch terminates in two rounds (decrementing first). When the second is refused, the first
    round's instances are going all the same: they are in replaced_instances, and the batch's drain is recorded."""
    steps = Steps()

    def start(batch):
        steps.note(("start", batch.instance_ids[0], batch.decrement))
        raise StepFailed(UpgradeError("UpgradeInProgress", "lease lost"), accepted=["i-1"])

    loop = ReplaceLoop(steps.drain, start, steps.finish, [].append, overlap=True)
    with pytest.raises(ReplaceFailed) as failed:
        loop.run(planned_batches([["i-1", "i-2"]]))
    assert failed.value.error.code == "UpgradeInProgress"
    assert failed.value.state.replaced_instances == ["i-1"]
    assert set(failed.value.state.drained_nodes) == {"node-i-1", "node-i-2"}


class WarningSteps(Steps):
    """Each drain warns about a pod of its node."""

    def drain(self, batch):
        output = super().drain(batch)
        for name, node in output.nodes.items():
            node["warnings"] = ["pod of %s: its emptyDir data is deleted" % name]
        return output


def test_issue25_item4_pod_warnings_are_printed_with_their_batch_and_the_drain_time_recorded():
    """Issue 25 item 4: a pod's warning is printed as its batch drains (not at the end of the phase), and each
    batch records when its drain ended, between its start and Auto Scaling accepting its termination (strategy
    minimal: the termination is waited for before the batch ends)."""
    lines = []
    loop = make_loop(WarningSteps(), overlap=False, lines=lines, total=2)
    state = loop.run(planned_batches([["i-1"], ["i-2"]]))
    first_end = next(n for n, line in enumerate(lines) if line.startswith("batch 1/2 ended"))
    assert lines[first_end - 1] == "batch 1/2: node node-i-1: pod of node-i-1: its emptyDir data is deleted"
    assert "batch 2/2: node node-i-2: pod of node-i-2: its emptyDir data is deleted" in lines[first_end:]
    for record in state.batches:
        assert record["started"] < record["drained"] < record["accepted"] < record["gone"] < record["ended"]


def test_issue25_item4_a_failed_drain_prints_its_warnings_with_its_batch():
    lines = []
    steps = Steps(fail={("drain", "i-1"): True})

    def drain(batch):
        try:
            return steps.drain(batch)
        except StepFailed as failure:
            failure.result["drain"]["nodes"]["node-i-1"]["warnings"] = ["pod a/b: no controller"]
            raise

    loop = ReplaceLoop(drain, steps.start, steps.finish, lines.append, overlap=False)
    with pytest.raises(ReplaceFailed):
        loop.run(planned_batches([["i-1"]]))
    assert lines[-1] == "batch 1: node node-i-1: pod a/b: no controller"


def test_issue25_item4_the_termination_records_where_the_batch_ran_and_the_group_per_az():
    from ansible_collections.eksops.nodegroup.plugins.module_utils.steps.asg_instance_terminate import zones_of
    asg = dict(Instances=[dict(InstanceId="i-1", AvailabilityZone="a", LifecycleState="InService"),
                          dict(InstanceId="i-2", AvailabilityZone="b", LifecycleState="InService"),
                          dict(InstanceId="i-3", AvailabilityZone="a", LifecycleState="Terminating:Wait"),
                          dict(InstanceId="i-4", AvailabilityZone="b", LifecycleState="Pending")])
    assert zones_of(asg, ["i-1"]) == dict(availability_zones={"i-1": "a"}, group_per_az={"a": 1, "b": 2})


def test_issue25_item4_an_overlapped_termination_is_timed_when_its_instances_went_not_when_joined():
    """Issue 25 item 4: the report's terminated_at. With overlap the wait is joined only before the next batch's
    termination, after that batch's drain: the time is the wait's own end."""
    loops = []

    class Ordered(Steps):
        def drain(self, batch):
            if batch.instance_ids == ["i-2"]:
                # Batch 1's wait has ended (its thread timed it) before batch 2's drain ends.
                for _attempt in range(500):
                    if loops[0].pending.done_at is not None:
                        break
                    threading.Event().wait(0.01)
            return super().drain(batch)

    loops.append(make_loop(Ordered(), overlap=True))
    state = loops[0].run(planned_batches([["i-1"], ["i-2"]]))
    first, second = state.batches
    assert first["accepted"] < first["gone"] < second["drained"]


def test_issue27_a_batch_is_expected_to_take_the_longest_batch_so_far_and_its_own_soak_and_gate():
    """Reviewer's finding: the canary's long soak made every later batch look as long; the soak that counts is the
    batch's own, the gate's wait the longest so far (its timeout before any)."""
    state = ReplaceState()
    assert expected_seconds(state, 1860, None, 600) == 1860
    assert expected_seconds(state, 1860, 60, 600) == 1860 + 60 + 600
    state.batches.append(dict(batch=1, started=0, ended=40, soak_ended=940, gate_passed=945))  # a 900 s canary soak
    state.batches.append(dict(batch=2, started=1000, ended=1030))
    assert expected_seconds(state, 1860, None, 600) == 40
    assert expected_seconds(state, 1860, 60, 600) == 40 + 60 + 5


def test_issue27_the_safe_point_before_the_first_batch_is_checked_once():
    gates = NoGates()
    context = SimpleNamespace(check_mode=False, warn=[].append)
    safe_point = BatchSafePoint(gates, context, lambda: None, lambda batch: 1560, "batch")
    safe_point.check(ReplaceState(), Batch(["i-1"]))  # before the cordon of every old node
    make_loop(Steps()).run(gated_batches(planned_batches([["i-1"], ["i-2"]]), lambda where: None, safe_point))
    assert [where for where, _seconds in gates.checked] == ["before batch 1", "before batch 2"]
