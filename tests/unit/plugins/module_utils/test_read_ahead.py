# -*- coding: utf-8 -*-
# Copyright: Contributors to the eksops.nodegroup project
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Issue 11 item 4: what node_replace's next batch needs is read while the batch before it waits out its post-drain
wait (phases/replace/read_ahead.py), and under the schedule once the next batch is planned ahead (phases/replace/next_batch.py) and used only
when the terminations went as predicted (SPEC B1: the same batch a read right after them would plan)."""

from __future__ import annotations

from types import SimpleNamespace

import pytest

from ansible_collections.eksops.nodegroup.plugins.module_utils.phases.replace import next_batch as live_planner
from ansible_collections.eksops.nodegroup.plugins.module_utils.phases.replace import read_ahead
from ansible_collections.eksops.nodegroup.plugins.module_utils.nodegroup import schedule_state as schedule_ops
from ansible_collections.eksops.nodegroup.plugins.module_utils.nodegroup.journal import Journal
from ansible_collections.eksops.nodegroup.plugins.module_utils.phases.replace.loop import Batch

from ..fakes import FakeNodegroup

# Three AZs, two nodes each before the upgrade, surged by one new node per AZ: in each AZ one old instance's
# termination is replaced and the other lowers the desired capacity, in the order the random draws pick them.
JOURNAL = Journal(run_id="run-1", phase="upgrade", schedule="once", start_per_az={"az-a": 2, "az-b": 2, "az-c": 2},
                  original_desired_capacity=6, desired_capacity_set=9, target_launch_template_version="2",
                  target_image_id="ami-new")
OLD = [("i-o%d" % n, az) for n, az in enumerate(["az-a", "az-a", "az-b", "az-b", "az-c", "az-c"])]
NEW = [("i-n%d" % n, az) for n, az in enumerate(["az-a", "az-b", "az-c"])]


def asg(desired, leaving=(), journal=JOURNAL):
    return dict(AutoScalingGroupName="workers-asg", AvailabilityZones=["az-a", "az-b", "az-c"],
                DesiredCapacity=desired, Tags=[dict(Key=k, Value=v) for k, v in journal.to_tags().items()],
                Instances=[dict(InstanceId=i, AvailabilityZone=az,
                                LifecycleState="Terminating" if i in leaving else "InService") for i, az in OLD + NEW])


def joined(leaving=()):
    return [dict(instance_id=i, availability_zone=az, lifecycle_state="Terminating" if i in leaving else "InService",
                 launch_template_version=2 if i.startswith("i-n") else 1,
                 image_id="ami-new" if i.startswith("i-n") else "ami-old", node_name="n-" + i, ready=True,
                 unschedulable=False) for i, az in OLD + NEW]


class World:
    """The group as read_group reads it, which a test moves along; counts the reads."""

    def __init__(self, monkeypatch):
        self.asg, self.joined, self.reads = asg(9), joined(), 0
        monkeypatch.setattr(schedule_ops, "read_group", self.read)

    def read(self, *_args):
        self.reads += 1
        return self.asg, self.joined, []

    def terminate(self, batch):
        """What Auto Scaling's acceptance of ``batch`` leaves (terminate_step.terminate)."""
        leaving = set(i["InstanceId"] for i in self.asg["Instances"] if i["LifecycleState"] == "Terminating")
        gone = set(batch.instance_ids) | leaving
        desired = self.asg["DesiredCapacity"] - len(batch.decrement_ids)
        self.asg = asg(desired, gone, JOURNAL.replace(desired_capacity_set=desired))
        self.joined = joined(gone)


def planner(seed=3):
    params = dict(batches=[[i] for i, _az in OLD], batch_size=None, seed=seed, accept_current_capacity=False)
    clients = SimpleNamespace(aws=lambda service: None, core_v1=lambda: None, instance_descriptions={})
    return live_planner.LivePlanner(params, clients, FakeNodegroup(asg(9)), [].append, {})


def round_of(described, batch, **result):
    """A termination round as terminate_step.start_termination returns it, accepted from the group ``described``."""
    group = FakeNodegroup(described)
    return SimpleNamespace(group=group, journal=group.journal(),
                           result=dict(dict(terminated=list(batch.instance_ids), already_terminated=[]), **result))


def run_without_reading_ahead(monkeypatch, seed):
    world, plan = World(monkeypatch), planner(seed)
    batches = []
    while (batch := plan(None)) is not None:
        batches.append((batch.instance_ids, batch.decrement_ids))
        world.terminate(batch)
    return batches, world.reads


def test_after_terminations_is_what_a_read_right_after_them_returns():
    batch = Batch(["i-o0", "i-o2"], decrement_ids=["i-o0"])
    predicted_asg, predicted_joined, predicted_journal = schedule_ops.after_terminations(
        asg(9), joined(), JOURNAL, batch.instance_ids, batch.decrement_ids)
    # The journal comes apart from the group's tags.
    assert dict(predicted_asg, Tags=None) == dict(asg(8, {"i-o0", "i-o2"}), Tags=None)
    assert predicted_joined == joined({"i-o0", "i-o2"})
    assert predicted_journal == JOURNAL.replace(desired_capacity_set=8)
    # Replaced, not decremented: the desired capacity and the journal stay.
    assert schedule_ops.after_terminations(asg(9), joined(), JOURNAL, ["i-o1"], [])[2] == JOURNAL


def test_the_planning_basis_ignores_a_pending_instance_going_in_service():
    pending = asg(9)
    pending["Instances"][-1]["LifecycleState"] = "Pending"
    assert schedule_ops.planning_basis(pending) == schedule_ops.planning_basis(asg(9))
    assert schedule_ops.planning_basis(asg(8)) != schedule_ops.planning_basis(asg(9))
    assert schedule_ops.planning_basis(asg(9, {"i-o0"})) != schedule_ops.planning_basis(asg(9))
    other = JOURNAL.replace(desired_capacity_set=8)
    assert schedule_ops.planning_basis(asg(9, journal=other)) != schedule_ops.planning_basis(asg(9))


@pytest.mark.parametrize("seed", [1, 3, 11])
def test_batches_planned_ahead_are_the_batches_planned_after_each_termination(monkeypatch, seed):
    """The same batches, in the same order, with one read per batch during its post-drain wait and none between a
    termination and the next batch."""
    expected, reads_live = run_without_reading_ahead(monkeypatch, seed)
    world, plan = World(monkeypatch), planner(seed)
    batches = []
    batch = plan(None)
    while batch is not None:
        batches.append((batch.instance_ids, batch.decrement_ids))
        plan.plan_ahead(batch)
        accepted_from = world.asg
        world.terminate(batch)
        plan.accepted([round_of(accepted_from, batch)])
        reads = world.reads
        batch = plan(None)
        assert world.reads == reads, "the next batch was planned ahead: no read after the termination"
    assert batches == expected and len(expected) == len(OLD)
    assert world.reads == 1 + len(OLD) and reads_live == len(OLD) + 1


def test_the_first_batch_planned_while_the_old_nodes_are_cordoned_is_the_first_batch(monkeypatch):
    expected, _reads = run_without_reading_ahead(monkeypatch, 3)
    world, plan = World(monkeypatch), planner(3)
    plan.plan_first()
    reads = world.reads
    first = plan(None)
    assert world.reads == reads == 1 and (first.instance_ids, first.decrement_ids) == expected[0]


def test_a_first_plan_that_failed_is_made_again_by_the_first_call(monkeypatch):
    expected, _reads = run_without_reading_ahead(monkeypatch, 3)
    world, plan = World(monkeypatch), planner(3)
    world.asg = dict(world.asg, Tags=[])  # no journal: the planner refuses to go on
    with pytest.raises(Exception):
        plan.plan_first()
    world.asg = asg(9)
    first = plan(None)
    assert (first.instance_ids, first.decrement_ids) == expected[0], "the failed plan took no random draw"


@pytest.mark.parametrize("what", ["desired capacity moved", "instance raced", "capacity adopted", "not planned"])
def test_a_termination_that_did_not_go_as_predicted_is_followed_by_a_live_read(monkeypatch, what):
    """Whatever differs from the prediction, the next batch is planned from the group read after the termination,
    with the random draws of the unused plan given back: the batches are those of a planner that never read ahead."""
    expected, _reads = run_without_reading_ahead(monkeypatch, 3)
    world, plan = World(monkeypatch), planner(3)
    first = plan(None)
    if what != "not planned":
        plan.plan_ahead(first)
    accepted_from = world.asg
    world.terminate(first)
    rounds = [round_of(accepted_from, first)]
    if what == "desired capacity moved":
        rounds = [round_of(dict(accepted_from, DesiredCapacity=10), first)]
    elif what == "instance raced":
        rounds = [round_of(accepted_from, first, terminated=[], already_terminated=list(first.instance_ids))]
    elif what == "capacity adopted":
        rounds[0].journal = JOURNAL.replace(desired_capacity_set=10)
    plan.accepted(rounds)
    reads = world.reads
    second = plan(None)
    assert world.reads == reads + 1
    assert [(first.instance_ids, first.decrement_ids), (second.instance_ids, second.decrement_ids)] == expected[:2]


def test_the_drain_of_the_next_batch_is_given_what_was_read_ahead(monkeypatch):
    found = []

    def find_load_balancers(context, drain, described):
        found.append(described["DesiredCapacity"])
        return "balancers"

    monkeypatch.setattr(read_ahead, "find_load_balancers", find_load_balancers)
    monkeypatch.setattr(read_ahead, "termination_hooks", lambda autoscaling, name: [])
    ahead = read_ahead.ReadAhead(context=SimpleNamespace(aws=lambda service: None), drain=None)
    names = {"i-o0": "n-i-o0", "i-o1": "n-i-o1", "i-o2": None}
    # Before the first termination nothing is known of the group: the first batches read for themselves.
    ahead.on_emptied(Batch(["i-o0"]))()
    ahead.join()
    assert ahead.drain_inputs(Batch(["i-o1"]), names) is None and found == []
    ahead.accepted([round_of(asg(9), Batch(["i-o0"]))])
    ahead.on_emptied(Batch(["i-o1"]))()
    ahead.join()
    prepared = ahead.drain_inputs(Batch(["i-o1"]), names)
    assert (prepared.group.asg, prepared.instances, prepared.balancers) == (asg(9), {"i-o1": "n-i-o1"}, "balancers")
    assert found == [9]
    # Each read serves one batch; an instance whose node is not known is looked up by the drain itself.
    assert ahead.drain_inputs(Batch(["i-o1"]), names) is None
    ahead.on_emptied(Batch(["i-o1"]))()
    ahead.join()
    assert ahead.drain_inputs(Batch(["i-o2"]), names) is None


def test_the_termination_is_given_the_hooks_read_during_its_post_drain_wait(monkeypatch):
    read = []
    monkeypatch.setattr(read_ahead, "find_load_balancers", lambda context, drain, described: None)
    monkeypatch.setattr(read_ahead, "termination_hooks", lambda autoscaling, name: read.append(name) or [{"name": "drain"}])
    context = SimpleNamespace(aws=lambda service: service)
    # The node group the phase found: the first batch's termination is given its hooks too.
    ahead = read_ahead.ReadAhead(context, None, group=FakeNodegroup(asg(9)))
    ahead.on_emptied(Batch(["i-o0"]))()
    assert ahead.termination_hooks() == [{"name": "drain"}] and read == ["workers-asg"]
    # Each read serves one termination: the next one reads its own unless read again.
    assert ahead.termination_hooks() is None


def test_a_failed_read_ahead_is_not_used(monkeypatch):
    def find_load_balancers(context, drain, described):
        raise RuntimeError("DescribeTargetGroups: throttled")

    monkeypatch.setattr(read_ahead, "find_load_balancers", find_load_balancers)
    ahead = read_ahead.ReadAhead(context=None, drain=None)
    ahead.accepted([round_of(asg(9), Batch(["i-o0"]))])
    ahead.on_emptied(Batch(["i-o0"]))()
    ahead.join()
    assert ahead.drain_inputs(Batch(["i-o1"]), {"i-o1": "n-i-o1"}) is None


def test_the_next_batch_is_asked_once_the_reads_ahead_are_done(monkeypatch):
    order = []
    monkeypatch.setattr(read_ahead, "find_load_balancers", lambda context, drain, described: order.append("read") or None)
    monkeypatch.setattr(read_ahead, "termination_hooks", lambda autoscaling, name: [])
    ahead = read_ahead.ReadAhead(context=SimpleNamespace(aws=lambda service: None), drain=None)
    ahead.accepted([round_of(asg(9), Batch(["i-o0"]))])
    next_batch = ahead.next_batch(lambda state: order.append("next batch"))
    ahead.on_emptied(Batch(["i-o0"]))()
    next_batch(None)
    assert order == ["read", "next batch"]
