# -*- coding: utf-8 -*-
# Copyright: Contributors to the eksops.nodegroup project
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""SPEC B1 (issue 11 item 1) wired into the phases: schedule_ops's decisions, the node_replace rounds and the loop's
records of a schedule once batch, without a server."""

from __future__ import annotations

from types import SimpleNamespace

import random

import pytest

from ansible_collections.eksops.nodegroup.plugins.module_utils.members import instances
from ansible_collections.eksops.nodegroup.plugins.module_utils.plan import schedule
from ansible_collections.eksops.nodegroup.plugins.module_utils.nodegroup import schedule_state as schedule_ops
from ansible_collections.eksops.nodegroup.plugins.module_utils.errors import UpgradeError
from ansible_collections.eksops.nodegroup.plugins.module_utils.nodegroup.journal import SURPLUS_ANNOTATION, Journal
from ansible_collections.eksops.nodegroup.plugins.module_utils.members.group_nodes import node_view
from ansible_collections.eksops.nodegroup.plugins.module_utils.phases.replace.loop import (
    Batch,
    Drained,
    ReplaceLoop,
    ReplaceState,
    planned_batches,
)
from ansible_collections.eksops.nodegroup.plugins.module_utils.phases.replace.phase import (
    Terminations,
    next_batch_source,
    termination_rounds,
    validate_schedule,
)

from ..fakes import FakeNodegroup

START = {"az-a": 2, "az-b": 1, "az-c": 0}
ONCE = Journal(run_id="run-1", phase="scale_up", schedule="once", start_per_az=START, original_desired_capacity=3,
               desired_capacity_set=9, surge=6, target_launch_template_version="2", target_image_id="ami-new")


def node(name, annotations=None):
    return node_view(dict(metadata=dict(name=name, annotations=annotations or {}), spec={}, status={}))


def instance(instance_id, az, new=True, state="InService", node_name=None):
    return dict(instance_id=instance_id, availability_zone=az, lifecycle_state=state,
                launch_template_version=2 if new else 1, image_id="ami-new" if new else "ami-old",
                node_name=node_name or "n-" + instance_id, ready=True, unschedulable=False)


# --- the scale-up's journal (C3: recorded before the surge; a rerun never recomputes) ---------------------------

def test_b1_the_first_surge_records_the_schedule_and_the_counts_before_it():
    fields, warning = schedule_ops.journal_schedule(None, "once", True, START, "asg")
    assert fields == dict(schedule="once", start_per_az=START) and warning is None
    fields, warning = schedule_ops.journal_schedule(Journal(phase="setup"), "eks", True, START, "asg")
    assert fields == dict(schedule="eks") and warning is None


def test_b1_a_rerun_keeps_the_journal_and_refuses_another_schedule_naming_it():
    assert schedule_ops.journal_schedule(ONCE, "once", True, {"az-a": 9}, "asg") == ({}, None)
    with pytest.raises(UpgradeError) as raised:
        schedule_ops.journal_schedule(ONCE, "eks", True, START, "asg")
    assert raised.value.code == "InvalidParameter" and raised.value.details["parameter"] == "schedule"
    assert "once" in raised.value.msg and "eks" in raised.value.msg


def test_b1_a_surge_recorded_without_a_schedule_goes_on_as_eks_with_a_warning():
    older = Journal(phase="upgrade", surge=6, run_id="r")
    fields, warning = schedule_ops.journal_schedule(older, "once", True, START, "asg")
    assert fields == {} and "older version" in warning and "(eks)" in warning
    assert schedule_ops.journal_schedule(older, "eks", True, START, "asg") == ({}, None)


def test_b1_once_is_refused_outside_the_rolling_scale_up():
    with pytest.raises(UpgradeError) as raised:
        schedule_ops.journal_schedule(None, "once", False, START, "asg")
    assert raised.value.details["parameter"] == "schedule"
    assert schedule_ops.journal_schedule(None, "eks", False, START, "asg") == ({}, None)


# --- the surplus the scale-up marks (after U3) ----------------------------------------------------------------

def test_b1_the_surplus_is_chosen_once_then_the_marks_are_kept(monkeypatch):
    new = [instance("i-1", "az-a"), instance("i-2", "az-c"), instance("i-3", "az-c")]
    asked = []

    def choose(start, new_by_az, preexisting=()):
        asked.append((dict(start), dict(new_by_az), list(preexisting)))
        return ["i-2", "i-3"]
    monkeypatch.setattr(schedule, "choose_surplus", choose)
    chosen = schedule_ops.surplus_to_mark(ONCE, "scale_up", new, [], ["i-1"])
    assert [i["instance_id"] for i in chosen] == ["i-2", "i-3"]
    assert asked == [(START, {"az-a": ["i-1"], "az-c": ["i-2", "i-3"]}, ["i-1"])]
    # A rerun finds this run's marks and keeps them, without choosing again.
    nodes = [node("n-i-2", {SURPLUS_ANNOTATION: "run-1"}), node("n-i-3", {SURPLUS_ANNOTATION: "another-run"})]
    assert [i["instance_id"] for i in schedule_ops.surplus_to_mark(ONCE, "upgrade", new, nodes, [])] == ["i-2"]
    assert len(asked) == 1


def test_b1_nothing_is_chosen_once_the_upgrade_phase_began_or_under_eks(monkeypatch):
    monkeypatch.setattr(schedule, "choose_surplus", lambda *a, **k: pytest.fail("not asked"))
    new = [instance("i-1", "az-a")]
    assert schedule_ops.surplus_to_mark(ONCE, "upgrade", new, [], []) == []
    assert schedule_ops.surplus_to_mark(ONCE.replace(schedule="eks", start_per_az=None), "scale_up", new, [], []) == []


# --- the upgrade phase's live view ----------------------------------------------------------------------------

def test_b1_the_view_counts_live_old_kept_and_owed_replacements():
    asg = dict(AvailabilityZones=["az-a", "az-b", "az-c"], DesiredCapacity=8)
    joined = [instance("i-o1", "az-a", new=False), instance("i-o2", "az-b", new=False),
              instance("i-o3", "az-a", new=False, state="Terminating"),
              instance("i-n1", "az-a"), instance("i-n2", "az-b"), instance("i-n3", "az-c")]
    view = schedule_ops.group_view(asg, joined, ONCE, {"n-i-n3"}, {})
    assert list(view.zones) == ["az-a", "az-b", "az-c"] and view.start == START
    assert view.old == {"az-a": ["i-o1"], "az-b": ["i-o2"]}
    assert view.kept_new == {"az-a": 1, "az-b": 1, "az-c": 0}
    assert view.live == {"az-a": 2, "az-b": 2, "az-c": 1}
    assert view.owed == 3  # 8 desired, 5 live: the terminating one's replacement and two more not launched yet


def test_b1_once_needs_start_per_az_and_falls_back_to_eks_saying_why():
    assert schedule_ops.live_schedule(ONCE, "once") == ("once", None)
    assert schedule_ops.live_schedule(ONCE, "eks") == ("eks", None)
    run, warning = schedule_ops.live_schedule(ONCE.replace(start_per_az=None), "once")
    assert run == "eks" and "start_per_az" in warning
    assert schedule_ops.live_schedule(None, "once")[0] == "eks"


@pytest.mark.parametrize("journal, desired, accept, expected", [
    (ONCE, 9, False, False),
    (ONCE, 11, False, False),  # not accepted: the termination step fails with ClusterAutoscalerActive
    (ONCE, 11, True, True),  # about to be accepted at the next termination
    (ONCE.replace(original_desired_capacity=5, desired_capacity_set=11), 11, False, True),  # accepted before
])
def test_b1_an_accepted_capacity_is_seen(journal, desired, accept, expected):
    assert schedule_ops.capacity_accepted(journal, desired, accept) is expected


def test_b1_the_eks_fallback_replaces_every_termination():
    joined = [instance("i-o%d" % n, "az-a", new=False) for n in range(3)] + [instance("i-n1", "az-a")]
    batch = schedule_ops.eks_batch(joined, ONCE, 2, random.Random(1), {})
    assert len(batch.instance_ids) == 2 and set(batch.instance_ids) <= {"i-o0", "i-o1", "i-o2"}
    assert batch.decrement_ids == [] and not batch.at_risk
    assert schedule_ops.eks_batch([instance("i-n1", "az-a")], ONCE, 2, random.Random(1), {}) is None


# --- node_replace: the rounds of a batch, the records ---------------------------------------------------------

def test_b1_the_decrementing_terminations_go_first_in_their_own_round():
    batch = Batch(["i-1", "i-2", "i-3"], decrement_ids=["i-3", "i-1"])
    assert termination_rounds(batch) == [(["i-1", "i-3"], True), (["i-2"], False)]
    assert termination_rounds(Batch(["i-1"])) == [(["i-1"], False)]
    assert termination_rounds(Batch(["i-1", "i-2"], decrement=True)) == [(["i-1", "i-2"], True)]


def test_b1_the_loop_reads_a_batchs_rounds_as_one_termination():
    first = SimpleNamespace(never_joined=[], availability_zones={"i-1": "az-a"}, group_per_az={"az-a": 2},
                            replacements=[], retained_instances=["i-1"])
    second = SimpleNamespace(never_joined=[{"instance_id": "i-2"}], availability_zones={"i-2": "az-b"},
                             group_per_az={"az-a": 1}, replacements=[{"instance_id": "i-9"}], retained_instances=[])
    rounds = Terminations([first, second])
    assert rounds.never_joined == [{"instance_id": "i-2"}] and rounds.retained_instances == ["i-1"]
    assert rounds.availability_zones == {"i-1": "az-a", "i-2": "az-b"} and rounds.replacements == [{"instance_id": "i-9"}]
    # the group per AZ as the first round found it, before any of the batch's terminations
    assert rounds.group_per_az == {"az-a": 2}


def _schedule_options(**options):
    return dict(dict(schedule="eks", wait_for_replacements=False, batches=None, steps=None, max_surge=None,
                     cordon_old_nodes=False, batch_size=None), **options)


def test_b1_once_is_refused_with_wait_for_replacements_naming_schedule():
    with pytest.raises(UpgradeError) as raised:
        validate_schedule(_schedule_options(schedule="once", wait_for_replacements=True))
    assert raised.value.details["parameter"] == "schedule"
    validate_schedule(_schedule_options(wait_for_replacements=True))


STEP = dict(desired_capacity=4, launch=1, instance_ids=["i-1"])


@pytest.mark.parametrize("options, parameter", [
    (dict(schedule="once"), "schedule"),
    (dict(cordon_old_nodes=True), "cordon_old_nodes"),
    (dict(wait_for_replacements=True), "wait_for_replacements"),
    (dict(steps=[dict(STEP, launch=-1)]), "steps"),
])
def test_s3_the_surge_steps_are_refused_with_what_they_do_not_take_naming_it(options, parameter):
    with pytest.raises(UpgradeError) as raised:
        validate_schedule(_schedule_options(**dict(dict(steps=[STEP]), **options)))
    assert raised.value.details["parameter"] == parameter
    validate_schedule(_schedule_options(steps=[STEP]))


def test_s3_the_surge_steps_run_under_the_schedule_eks_and_launch_before_their_terminations():
    schedule_run, next_batch = next_batch_source(_schedule_options(steps=[STEP]), None, False, None, {})
    first = next_batch(ReplaceState())
    # Issue 26 item 2: the step's old instances are taken once its launch is placed, among the plan's.
    assert schedule_run == "eks" and (first.desired_capacity, first.launch, first.instance_ids) == (4, 1, [])
    assert first.choose_old == dict(candidates=["i-1"], count=1, end_size=3, next_launch=0)
    first.take(["i-1"])
    assert termination_rounds(first) == [(["i-1"], True)]
    # Check mode launches nothing: it walks the plan's own.
    assert next_batch_source(_schedule_options(steps=[STEP]), None, True, None, {})[1](ReplaceState()).instance_ids \
        == ["i-1"]


class _Handle:
    never_joined, availability_zones, group_per_az, replacements, retained_instances = [], {}, {}, [], []


def test_b1_the_loop_records_decrements_and_at_risk_batches_and_says_so():
    lines = []
    batches = iter([Batch(["i-1", "i-2"], decrement_ids=["i-2"], at_risk=True), Batch(["i-3"]), None])
    loop = ReplaceLoop(lambda b: Drained({}, {}), lambda b: _Handle(),
                       lambda h: h, lines.append, overlap=False, total=2)
    state = loop.run(lambda state: next(batches))
    record = state.to_dict()
    assert record["decrements"] == 1 and record["at_risk_batches"] == [1]
    assert record["batches"][0]["decrement_ids"] == ["i-2"] and record["batches"][1]["decrement_ids"] == []
    ended = [line for line in lines if " ended at " in line]
    assert ended[0].endswith("(1 decrement)") and "decrement" not in ended[1]


def test_b1_a_planner_answering_more_batches_than_planned_drops_the_total():
    lines = []
    loop = ReplaceLoop(lambda b: Drained({}, {}), lambda b: _Handle(),
                       lambda h: h, lines.append, overlap=False, total=1)
    loop.run(planned_batches([["i-1"], ["i-2"]]))
    assert lines[0].startswith("batch 1/1 started") and lines[2].startswith("batch 2 started")


# --- the scale-down's choice ----------------------------------------------------------------------------------

def test_b1_the_scale_down_removes_the_marked_surplus_first_then_az_balanced():
    members = [instance("i-1", "az-a"), instance("i-2", "az-a"), instance("i-3", "az-c"), instance("i-4", "az-b")]
    nodes = [node("n-i-3", {SURPLUS_ANNOTATION: "run-1"}), node("n-i-4", {SURPLUS_ANNOTATION: "other"})]
    chosen = schedule_ops.restore_choice(members, nodes, ONCE, 2, 2)
    assert chosen[0]["instance_id"] == "i-3" and chosen[1]["instance_id"] in ("i-1", "i-2")
    # Under EKS's schedule the marks mean nothing: AZ-balanced only (az-a has the most).
    eks = schedule_ops.restore_choice(members, nodes, ONCE.replace(schedule="eks"), 1, 2)
    assert eks[0]["availability_zone"] == "az-a"
    assert schedule_ops.restore_choice(members, nodes, ONCE, 0, 2) == []


def test_b1_nodes_that_held_pods_to_move_are_counted():
    drain = {"a": dict(evicted=["default/web-1"], deleted=[]), "b": dict(evicted=[], deleted=[]),
             "c": dict(evicted=[], deleted=["default/x"])}
    assert schedule_ops.nodes_with_moved_pods(drain) == ["a", "c"]


# --- node_replace's live planner, on canned reads of the group ------------------------------------------------

def _planner(monkeypatch, journal, desired, joined, nodes=(), accept=False):
    from ansible_collections.eksops.nodegroup.plugins.module_utils.phases.replace import next_batch as live_planner

    asg = dict(AvailabilityZones=["az-a", "az-b", "az-c"], DesiredCapacity=desired,
               Tags=[dict(Key=k, Value=v) for k, v in journal.to_tags().items()] if journal else [])
    monkeypatch.setattr(schedule_ops, "read_group", lambda *args: (asg, list(joined), list(nodes)))

    class Clients:
        instance_descriptions = {}

        def aws(self, service):
            return None

        def core_v1(self):
            return None
    warnings, names = [], {}
    params = dict(batches=[["i-o1"], ["i-o2"]], batch_size=None, seed=7, accept_current_capacity=accept)
    return live_planner.LivePlanner(params, Clients(), FakeNodegroup(asg), warnings.append, names), warnings, names


JOURNAL = Journal(run_id="run-1", phase="upgrade", schedule="once", start_per_az={"az-a": 1, "az-b": 1, "az-c": 0},
                  original_desired_capacity=2, desired_capacity_set=4, target_launch_template_version="2",
                  target_image_id="ami-new")
GROUP = [instance("i-o1", "az-a", new=False), instance("i-o2", "az-b", new=False),
         instance("i-n1", "az-a"), instance("i-n2", "az-b")]


def test_b1_the_live_planner_asks_the_schedule_with_the_group_as_it_is(monkeypatch):
    asked = []

    def next_batch(view, batch_size, rng):
        asked.append((view.old, view.kept_new, view.live, view.owed, batch_size))
        return schedule.ScheduledBatch(["i-o1"], ["i-o1"])
    monkeypatch.setattr(schedule, "next_batch", next_batch)
    planner, warnings, names = _planner(monkeypatch, JOURNAL, 4, GROUP)
    batch = planner(None)
    assert (batch.instance_ids, batch.decrement_ids, batch.at_risk) == (["i-o1"], ["i-o1"], False)
    # batch_size defaults to the plan's largest batch
    assert asked == [({"az-a": ["i-o1"], "az-b": ["i-o2"]}, {"az-a": 1, "az-b": 1, "az-c": 0},
                      {"az-a": 2, "az-b": 2, "az-c": 0}, 0, 1)]
    assert warnings == [] and names["i-n1"] == "n-i-n1"


def test_b1_after_an_accepted_capacity_the_remaining_batches_are_eks_said_once(monkeypatch):
    monkeypatch.setattr(schedule, "next_batch", lambda *a: pytest.fail("not asked after the fallback"))
    planner, warnings, _names = _planner(monkeypatch, JOURNAL, 6, GROUP, accept=True)
    first, second = planner(None), planner(None)
    assert first.decrement_ids == [] and second.decrement_ids == []
    assert len(warnings) == 1 and "accept_current_capacity" in warnings[0]


def test_the_live_read_describes_each_instance_once_for_the_phase(monkeypatch):
    """Issue 11: the live planner read the whole group from EC2 before every batch (0.10-0.13 s on moto at N = 30);
    what the join reads of a description never changes in an instance's life, so only new instances are asked."""
    asked = []

    def describe_instances(_ec2, ids):
        asked.append(sorted(ids))
        return dict((i, {"InstanceId": i, "ImageId": "ami-" + i}) for i in ids)

    monkeypatch.setattr(instances, "describe_instances", describe_instances)
    members = [dict(InstanceId="i-a", AvailabilityZone="az-a"), dict(InstanceId="i-b", AvailabilityZone="az-b")]
    group = FakeNodegroup(dict(Instances=members))
    described = {}

    def read(instances):
        return schedule_ops.read_group(None, None, None, group, lambda _a, _n: dict(Instances=instances),
                                       lambda _c, _g: [], described)

    read(members)
    _asg, joined, _nodes = read(members[1:] + [dict(InstanceId="i-c", AvailabilityZone="az-c")])
    assert asked == [["i-a", "i-b"], ["i-c"]]
    assert [(i["instance_id"], i["image_id"]) for i in joined] == [("i-b", "ami-i-b"), ("i-c", "ami-i-c")]


def test_b1_a_journal_gone_mid_upgrade_stops_the_loop(monkeypatch):
    from ansible_collections.eksops.nodegroup.plugins.module_utils.errors import StepFailed

    planner, _warnings, _names = _planner(monkeypatch, None, 4, GROUP)
    with pytest.raises(StepFailed) as raised:
        planner(None)
    assert raised.value.error.code == "ResourceNotFound"
