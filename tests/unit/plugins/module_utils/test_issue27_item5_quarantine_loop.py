# -*- coding: utf-8 -*-
# Copyright: Contributors to the eksops.nodegroup project
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Issue 27 item 5, undrainable_nodes quarantine in node_replace's loop (phases/replace/quarantine.py) with fake
steps and a fake API server's nodes: a node whose drain timed out is labelled and left out of its batch, the run
goes on, retries it last (one more drain), and ends NodesQuarantined naming node, pod and PodDisruptionBudget;
max_quarantined_nodes stops the run at once; a surge step keeps the node it launched and the next steps count the
instance left in the group; a rerun carries a labelled node over and retries it last; the schedule once's live view
counts a held instance as live and never takes it (SPEC U5, U8, S3, B1)."""

from __future__ import annotations

from types import SimpleNamespace

import pytest

from ansible_collections.eksops.nodegroup.plugins.module_utils.errors import UpgradeError
from ansible_collections.eksops.nodegroup.plugins.module_utils.members.group_nodes import node_view
from ansible_collections.eksops.nodegroup.plugins.module_utils.nodegroup import schedule_state as schedule_ops
from ansible_collections.eksops.nodegroup.plugins.module_utils.phases.replace.loop import (
    Batch,
    Drained,
    ReplaceFailed,
    ReplaceLoop,
    ReplaceState,
    planned_batches,
    planned_steps,
)
from ansible_collections.eksops.nodegroup.plugins.module_utils._drain.cordon import EXCLUDE_LB_LABEL, cordon_patch
from ansible_collections.eksops.nodegroup.plugins.module_utils.phases.replace.quarantine import (
    CarriedOver,
    Quarantine,
    drained_and_held,
    start_quarantine,
)
from ansible_collections.eksops.nodegroup.plugins.module_utils.plan.quarantine_book import (
    QUARANTINE_LABEL,
    QUARANTINE_REASON_ANNOTATION,
    QuarantineBook,
)

from ..fakes import FakeCoreV1, node
from .test_schedule_ops import ONCE, instance

BLOCKER = dict(pod="payments/billing-1", reason="Cannot evict pod (drain_timeout=5 s)", pdb="payments/billing")


class Run:
    """A loop whose drains fail for the instances of ``blocked`` (instance id -> drains that fail, -1: all)."""

    def __init__(self, ids, blocked, limit=2, surge=False, carried=None, uncordon_run_id=None, old_ids=()):
        self.core = FakeCoreV1([node("node-" + i) for i in ids])
        self.blocked = dict(blocked)
        self.events, self.lines, self.desired = [], [], []
        book = QuarantineBook.carried_over(limit, carried or {})
        self.quarantine = Quarantine(book, lambda: self.core, self.lines.append, surge, batch_size=1,
                                     uncordon_run_id=uncordon_run_id, old_ids=old_ids)
        self.loop = ReplaceLoop(self.drain, self.start, lambda handle: handle, self.lines.append, overlap=False,
                                node_names=dict((i, "node-" + i) for i in ids))

    def drain(self, batch):
        if batch.desired_capacity is not None:
            self.desired.append(batch.desired_capacity)
        if batch.choose_old is not None:
            batch.take(batch.choose_old["candidates"][:batch.choose_old["count"]])
        self.events.append(("drain", tuple(batch.instance_ids), batch.retry))
        for i in batch.instance_ids:
            # The drain cordons its nodes and labels them out of the load balancers, marked with its run id.
            patch = cordon_patch(self.core.nodes["node-" + i], "run-1", True)
            if patch is not None:
                self.core.patch_node("node-" + i, patch, "application/merge-patch+json")
        failing = [i for i in batch.instance_ids if self.blocked.get(i, 0)]
        for i in failing:
            self.blocked[i] -= 1
        instances = dict((i, "node-" + i) for i in batch.instance_ids)
        nodes = dict((n, dict(failed=[BLOCKER] if i in failing else [], error="held" if i in failing else None,
                              evicted=["default/web-%s-%d" % (i, len(self.events))])) for i, n in instances.items())
        held = {}
        if failing:
            codes = dict(("node-" + i, "PodEvictionFailure") for i in failing)
            held = self.quarantine.hold(batch, codes, set(codes), dict(drain=dict(nodes=nodes)), instances)
        drained = self.quarantine.released(batch, dict((n, r) for n, r in nodes.items() if n not in held.values()))
        return Drained(drained, instances, None, held)

    def start(self, batch):
        self.events.append(("terminate", tuple(batch.instance_ids), batch.decrement))
        return Handle()

    def run(self, source):
        state = self.loop.run(self.quarantine.next_batch(source))
        self.quarantine.finish(state)
        return state

    def terminated(self):
        return [i for event in self.events if event[0] == "terminate" for i in event[1]]


class Handle:
    never_joined, availability_zones, group_per_az, replacements, retained_instances = [], {}, {}, [], []


def test_issue27_item5_a_held_node_is_labelled_the_run_goes_on_retries_it_last_and_fails_naming_it():
    run = Run(["i-1", "i-2", "i-3"], {"i-2": -1})
    with pytest.raises(ReplaceFailed) as raised:
        run.run(planned_batches([["i-1"], ["i-2"], ["i-3"]]))
    error = raised.value.error
    assert error.code == "NodesQuarantined"
    assert "node node-i-2 (i-2): payments/billing-1 (PodDisruptionBudget payments/billing)" in error.msg
    assert run.terminated() == ["i-1", "i-3"]
    assert [e for e in run.events if e[0] == "drain"] == [("drain", ("i-1",), False), ("drain", ("i-2",), False),
                                                          ("drain", ("i-3",), False), ("drain", ("i-2",), True)]
    labelled = run.core.nodes["node-i-2"]["metadata"]
    assert labelled["labels"][QUARANTINE_LABEL] == "true"
    assert "payments/billing" in labelled["annotations"][QUARANTINE_REASON_ANNOTATION]
    state = raised.value.state
    assert [(q["node"], q["batch"], q["retried"]) for q in state.quarantined] == [("node-i-2", 2, True)]
    assert state.batches[1]["quarantined"] == ["node-i-2"] and state.batches[1]["instance_ids"] == []
    assert state.batches[3]["retry"] is True
    assert raised.value.failed_step["drain"]["nodes"]["node-i-2"]["failed"] == [BLOCKER]
    assert any("quarantined" in line and "retried once every other node is replaced" in line for line in run.lines)


def test_issue27_item5_a_retry_that_drains_the_node_terminates_it_and_the_run_succeeds():
    run = Run(["i-1", "i-2", "i-3"], {"i-2": 1})
    state = run.run(planned_batches([["i-1", "i-2"], ["i-3"]]))
    assert run.terminated() == ["i-1", "i-3", "i-2"]
    assert state.quarantined == []
    assert state.replaced_instances == ["i-1", "i-3", "i-2"]
    # Every pod moved off i-2's node, by the drain that timed out and by the retry.
    assert state.drained_nodes["node-i-2"]["evicted"] == ["default/web-i-2-1", "default/web-i-2-5"]


def test_issue27_item5_one_more_than_max_quarantined_nodes_stops_the_run_at_once():
    run = Run(["i-1", "i-2", "i-3"], {"i-1": -1, "i-2": -1}, limit=1)
    with pytest.raises(ReplaceFailed) as raised:
        run.run(planned_batches([["i-1"], ["i-2"], ["i-3"]]))
    assert raised.value.error.details["max_quarantined_nodes_exceeded"] is True
    assert raised.value.error.details["failed_nodes"] == ["node-i-1", "node-i-2"]
    # Stopped before the next batch: i-3 was never drained, nothing retried, the node that exceeded it labelled.
    assert [e[1] for e in run.events if e[0] == "drain"] == [("i-1",), ("i-2",)]
    assert run.terminated() == []
    assert run.core.nodes["node-i-2"]["metadata"]["labels"][QUARANTINE_LABEL] == "true"


def test_issue27_item5_max_quarantined_nodes_exceeded_lets_the_batch_finish_and_stops_before_the_next():
    """Issue 27 item 5 (SPEC U5): the batch's other node was drained: it is terminated and reported drained, not
    left cordoned and empty; no later batch starts, nothing is retried."""
    run = Run(["i-1", "i-2", "i-3", "i-4"], {"i-1": -1, "i-3": -1}, limit=1)
    with pytest.raises(ReplaceFailed) as raised:
        run.run(planned_batches([["i-1"], ["i-2", "i-3"], ["i-4"]]))
    assert raised.value.error.details["max_quarantined_nodes_exceeded"] is True
    assert raised.value.error.details["failed_nodes"] == ["node-i-1", "node-i-3"]
    assert "before its next batch" in raised.value.error.msg
    assert [e[1] for e in run.events if e[0] == "drain"] == [("i-1",), ("i-2", "i-3")]
    assert run.terminated() == ["i-2"]
    state = raised.value.state
    assert list(state.drained_nodes) == ["node-i-2"] and state.replaced_instances == ["i-2"]
    assert raised.value.failed_step["drain"]["nodes"]["node-i-3"]["failed"] == [BLOCKER]


def test_issue27_item5_a_surge_step_keeps_its_new_node_and_the_next_steps_count_the_held_instance():
    steps = [dict(desired_capacity=4, launch=1, instance_ids=["i-a"]),
             dict(desired_capacity=4, launch=1, instance_ids=["i-b"]),
             dict(desired_capacity=4, launch=1, instance_ids=["i-c"])]
    run = Run(["i-a", "i-b", "i-c"], {"i-a": 1}, surge=True)
    run.run(planned_steps(steps))
    # Step 1's termination of i-a did not happen: the group holds one more instance than the plan from then on, so
    # each later step raises the desired capacity one higher (Auto Scaling never scales in an undrained node).
    assert run.desired == [4, 5, 5]
    assert [e for e in run.events if e[0] == "terminate"] == [("terminate", ("i-b",), True),
                                                              ("terminate", ("i-c",), True),
                                                              ("terminate", ("i-a",), True)]


def test_issue27_item5_a_rerun_carries_a_labelled_node_over_and_retries_it_last():
    run = Run(["i-1", "i-2", "i-3"], {}, carried={"i-2": "node-i-2"})
    batches = run.quarantine.planned([["i-1", "i-2"], ["i-3"]])
    assert batches == [["i-1"], ["i-3"]]
    state = run.run(planned_batches(batches))
    assert [e[1:] for e in run.events if e[0] == "drain"] == [(("i-1",), False), (("i-3",), False), (("i-2",), True)]
    assert state.quarantined == []


def test_issue27_item5_the_live_view_counts_a_held_instance_as_live_and_never_takes_it():
    asg = dict(AvailabilityZones=["az-a", "az-b", "az-c"], DesiredCapacity=5)
    joined = [instance("i-o1", "az-a", new=False), instance("i-o2", "az-b", new=False),
              instance("i-n1", "az-a"), instance("i-n2", "az-b"), instance("i-n3", "az-c")]
    view = schedule_ops.group_view(asg, joined, ONCE, set(), {}, held={"i-o1"})
    assert view.old == {"az-b": ["i-o2"]}
    assert view.live == {"az-a": 2, "az-b": 2, "az-c": 1} and view.owed == 0


def test_issue27_item5_the_scale_down_removes_a_quarantined_node_only_when_no_other_is_left():
    # The old node (off the group's version, so first otherwise) holds pods a budget keeps: a new node goes instead.
    members = [instance("i-old", "az-a", new=False), instance("i-n1", "az-a"), instance("i-n2", "az-b")]
    held = node_view(dict(metadata=dict(name="n-i-old", labels={QUARANTINE_LABEL: "true"}), spec={}, status={}))
    eks = ONCE.replace(schedule="eks")
    assert [i["instance_id"] for i in schedule_ops.restore_choice(members, [], eks, 1, 2)] == ["i-old"]
    chosen = schedule_ops.restore_choice(members, [held], eks, 1, 2)
    assert chosen[0]["instance_id"] in ("i-n1", "i-n2")
    assert [i["instance_id"] for i in schedule_ops.restore_choice(members, [held], eks, 3, 2)][-1] == "i-old"


def test_issue27_item5_a_surge_rerun_launches_for_a_carried_node_keeps_it_out_and_retries_it_last():
    # The rerun's plan replaces the one old instance left, quarantined by the earlier run: its step launches, takes
    # no old instance (the held one is left out), and the retry's termination lowers the desired capacity back.
    steps = [dict(desired_capacity=4, launch=1, instance_ids=["i-a"])]
    run = Run(["i-a"], {}, surge=True, carried={"i-a": "node-i-a"})
    run.run(planned_steps(steps))
    assert run.desired == [4]
    assert [e[1:] for e in run.events if e[0] == "drain"] == [((), False), (("i-a",), True)]
    assert [e for e in run.events if e[0] == "terminate"] == [("terminate", ("i-a",), True)]


def test_issue27_item5_a_surge_step_that_found_no_old_instance_to_take_is_counted_in_the_next_step():
    # Three steps planned for i-a, i-b, i-c; an earlier run quarantined i-a and i-b. Step 1 takes i-c; step 2
    # finds no old instance left to take and keeps the node it launched, so step 3 raises the desired capacity one
    # higher than planned (never below the group's size: Auto Scaling would scale in); the retries' terminations
    # lower it back to the plan's end.
    steps = [dict(desired_capacity=4, launch=1, instance_ids=["i-a"]),
             dict(desired_capacity=4, launch=1, instance_ids=["i-b"]),
             dict(desired_capacity=4, launch=1, instance_ids=["i-c"])]
    run = Run(["i-a", "i-b", "i-c"], {}, surge=True, carried={"i-a": "node-i-a", "i-b": "node-i-b"})
    run.run(planned_steps(steps))
    assert run.desired == [4, 4, 5]
    assert [e for e in run.events if e[0] == "terminate"] == [("terminate", ("i-c",), True),
                                                              ("terminate", ("i-a",), True),
                                                              ("terminate", ("i-b",), True)]


def test_issue27_item5_review_3_a_dry_runs_surge_steps_have_the_runs_desired_capacities_around_a_carried_node():
    """Issue 27 item 5 review 3 (SPEC S3, issue 10 item 9: check mode shows the real plan): a launched surge step
    chooses its count of old instances among those not held, so a node an earlier run quarantined costs the last
    steps theirs, and the step after one that found none raises the desired capacity for it. Check mode's steps
    name their instances (nothing launched): one whose named node is held takes the plan's next old instance in
    its place, so that the dry run's steps take as many and set the desired capacities the run sets."""
    one = [dict(desired_capacity=4, launch=1, instance_ids=[i]) for i in ("i-a", "i-b", "i-c")]
    two = [dict(desired_capacity=5, launch=2, instance_ids=["i-a", "i-b"]),
           dict(desired_capacity=4, launch=1, instance_ids=["i-c", "i-d"])]
    for steps, carried, desired in ((one, ["i-a", "i-b"], [4, 4, 5]), (one, ["i-a"], [4, 4, 4]), (two, ["i-a"], [5, 4])):
        ids = [i for step in steps for i in step["instance_ids"]]
        counts = []
        for choose_after_launch in (True, False):
            run = Run(ids, {}, surge=True, carried=dict((i, "node-" + i) for i in carried), old_ids=ids)
            run.run(planned_steps(steps, choose_after_launch=choose_after_launch))
            assert run.desired == desired
            counts.append([len(e[1]) for e in run.events if e[0] == "drain"])
            assert sorted(run.terminated()) == ids
        assert counts[0] == counts[1]
    params = dict(steps=two, batches=None, max_quarantined_nodes=1, batch_size=None, cordon_old_nodes=False,
                  wait_for_replacements=False)
    quarantine = start_quarantine(params, SimpleNamespace(core_v1=None), {}, print, Carried())[1]
    assert quarantine.old_ids == ["i-a", "i-b", "i-c", "i-d"]


class Outcome:
    """A drain step's outcome (steps/node_drain.DrainOutcome) as drained_and_held reads it."""

    def __init__(self, nodes, codes, instances):
        self.nodes, self.failed_codes, self.timed_out, self.instances = nodes, codes, set(codes), instances
        self.error = UpgradeError("PodEvictionFailure", "held") if codes else None

    def to_result(self, context):
        return dict(drain=dict(nodes=self.nodes))


def test_issue27_item5_item1_the_health_gate_judges_the_workloads_moved_off_held_nodes_too():
    """Issue 27 items 1 and 5: the pods a timed-out drain evicted moved; the gate after the batch judges their
    workloads, and after the retry that drains the node, those of every drain of it (SPEC U5)."""
    run = Run(["i-1", "i-2"], {})
    nodes = {"node-i-1": dict(evicted=["default/a-1"], workloads=["Deployment default/a"]),
             "node-i-2": dict(evicted=["default/b-1"], workloads=["Deployment default/b"], failed=[BLOCKER])}
    outcome = Outcome(nodes, {"node-i-2": "PodEvictionFailure"}, {"i-1": "node-i-1", "i-2": "node-i-2"})
    drained = drained_and_held(run.quarantine, Batch(["i-1", "i-2"]), outcome, None, None)
    assert drained.quarantined == {"i-2": "node-i-2"} and list(drained.nodes) == ["node-i-1"]
    assert drained.workloads == ["Deployment default/a", "Deployment default/b"]
    retry = run.quarantine.next_batch(lambda state: None)(ReplaceState())
    assert retry.retry and retry.instance_ids == ["i-2"]
    again = Outcome({"node-i-2": dict(evicted=["default/c-1"], workloads=["StatefulSet default/c"])}, {},
                    {"i-2": "node-i-2"})
    assert drained_and_held(run.quarantine, retry, again, None, None).workloads == [
        "Deployment default/b", "StatefulSet default/c"]


def test_issue27_item5_with_update_strategy_minimal_a_held_node_is_given_back_to_the_scheduler():
    """SPEC U7: update_strategy minimal cordons no old node before its batch and adds no node first, and a held
    node's instance is not terminated, so no replacement comes for it. Left cordoned, the room it had was missing
    for the pods the later batches evict: on the sandbox's group of two the other node's drain found nowhere to
    put web's second pod, its budget held that node too, and the run stopped with both cordoned. The held node is
    uncordoned (its drain's cordon undone, the load balancer label too), labelled, and retried last; the other
    node is terminated and replaced (no decrement)."""
    run = Run(["i-1", "i-2"], {"i-1": -1}, limit=1, uncordon_run_id="run-1")
    with pytest.raises(ReplaceFailed) as raised:
        run.run(planned_batches([["i-1"], ["i-2"]]))
    held = run.core.nodes["node-i-1"]
    assert not held["spec"].get("unschedulable") and EXCLUDE_LB_LABEL not in held["metadata"]["labels"]
    assert held["metadata"]["labels"][QUARANTINE_LABEL] == "true"
    assert run.core.nodes["node-i-2"]["spec"]["unschedulable"] is True
    assert [e for e in run.events if e[0] == "terminate"] == [("terminate", ("i-2",), False)]
    assert [e[2] for e in run.events if e[0] == "drain"] == [False, False, True]
    error = raised.value.error
    assert error.code == "NodesQuarantined" and "cordoned" not in error.msg.replace("uncordoned", "")
    assert "labelled eksops.nodegroup/quarantined=true (uncordoned: the run added no node in its place)" in error.msg
    assert any("node node-i-1 (i-1) quarantined" in line and "is uncordoned" in line for line in run.lines)


class Carried:
    """CarriedOver of a first run: active, no node labelled yet."""

    active = True

    def __call__(self, node_names):
        return {}


def test_issue27_item5_only_a_run_that_adds_no_node_in_a_held_ones_place_uncordons_it():
    """The default strategy cordoned every old node before the first batch (U4), a surge step keeps the node it
    launched (S3): their held nodes stay cordoned; minimal's (no cordon first, no surge) are given back."""
    base = dict(steps=None, batches=[["i-1"], ["i-2"]], max_quarantined_nodes=1, batch_size=1)
    surge_steps = [dict(instance_ids=["i-1"]), dict(instance_ids=["i-2"])]
    for cordon_old_nodes, wait, steps, expected in ((False, True, None, "run-1"), (True, False, None, None),
                                                    (False, False, surge_steps, None)):
        quarantine = start_quarantine(dict(base, cordon_old_nodes=cordon_old_nodes, wait_for_replacements=wait,
                                           steps=steps),
                                      SimpleNamespace(core_v1=None), {}, print, Carried(), "run-1")[1]
        assert (quarantine.uncordon_run_id, quarantine.book.cordoned) == (expected, expected is None)


def test_issue27_item5_review_1_the_held_node_is_uncordoned_for_the_minimal_strategy_not_for_cordon_old_nodes():
    """Issue 27 item 5 review 1 (SPEC U7): a held node is given back to the scheduler only by the minimal strategy,
    which node_replace knows by wait_for_replacements (the role passes it for update_strategy minimal, and no
    cordon_old_nodes): it added no capacity first and launches no node in the held one's place. node_replace's
    defaults (the default strategy, cordon_old_nodes false: a user who cordons nothing ahead, the room added by the
    scale-up) keep the held node cordoned, as its docs say."""
    params = dict(steps=None, batches=[["i-1"], ["i-2"]], max_quarantined_nodes=1, batch_size=1,
                  cordon_old_nodes=False, wait_for_replacements=False)
    for wait, cordon_old_nodes, expected in ((False, False, None), (True, False, "run-1"), (True, True, None)):
        quarantine = start_quarantine(dict(params, wait_for_replacements=wait, cordon_old_nodes=cordon_old_nodes),
                                      SimpleNamespace(core_v1=None), {}, print, Carried(), "run-1")[1]
        assert (quarantine.uncordon_run_id, quarantine.book.cordoned) == (expected, expected is None)


def test_issue27_item5_check_mode_leaves_an_earlier_runs_quarantined_node_out_and_retries_it_last():
    """Issue 10 item 9 (check mode shows the real plan): the nodes an earlier run quarantined are read in check mode
    too, left out of the plan's batches, and a check-mode surge step, which names its old instances (nothing
    launched to choose them by), does not take them either; each is retried last, as the run does."""
    core = FakeCoreV1([node("node-i-1", labels={QUARANTINE_LABEL: "true"}), node("node-i-2")])
    clients = SimpleNamespace(core_v1=lambda: core)
    params = dict(undrainable_nodes="quarantine", steps=None, batches=[["i-1"], ["i-2"]], max_quarantined_nodes=1,
                  batch_size=1, cordon_old_nodes=True, wait_for_replacements=False)
    names = {"i-1": "node-i-1", "i-2": "node-i-2"}
    planned, quarantine = start_quarantine(params, clients, names, print, CarriedOver(params, clients))
    assert planned["batches"] == [["i-2"]] and list(quarantine.book.held) == ["i-1"]
    steps = [dict(desired_capacity=3, launch=1, instance_ids=["i-1", "i-2"])]
    run = Run(["i-1", "i-2"], {}, surge=True, carried={"i-1": "node-i-1"})
    run.run(planned_steps(steps, choose_after_launch=False))
    assert [e[1:] for e in run.events if e[0] == "drain"] == [(("i-2",), False), (("i-1",), True)]
