# -*- coding: utf-8 -*-
# Copyright: Contributors to the eksops.nodegroup project
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""node_replace (issue 11 item 4): its documentation matches its argument spec, and each batch's steps get what
roles/upgrade/tasks/batch.yml passed node_drain and asg_instance_terminate (SPEC U5, U7)."""

from __future__ import annotations

from types import SimpleNamespace
from unittest import mock

import pytest
from ansible.module_utils.common.arg_spec import ArgumentSpecValidator

from ansible_collections.eksops.nodegroup.plugins.module_utils.gates.safe_points import SafePoints
from ansible_collections.eksops.nodegroup.plugins.module_utils.phases.replace import phase as replace_steps
from ansible_collections.eksops.nodegroup.plugins.module_utils.steps import asg_instance_terminate as terminate_step
from ansible_collections.eksops.nodegroup.plugins.module_utils.steps import node_drain as drain_step
from ansible_collections.eksops.nodegroup.plugins.module_utils.host import step_context
from ansible_collections.eksops.nodegroup.plugins.module_utils.errors import UpgradeError
from ansible_collections.eksops.nodegroup.plugins.module_utils.phases.replace.loop import Batch
from ansible_collections.eksops.nodegroup.plugins.module_utils.errors import StepFailed
from ansible_collections.eksops.nodegroup.plugins.module_utils.phases.replace.phase import full_argument_spec, step_options
from ansible_collections.eksops.nodegroup.plugins.modules import node_replace

from ..module_docs import assert_docs_match_spec


def params(**overrides):
    args = dict(cluster_name="prod", nodegroup_name="workers", asg_name="workers-asg", batches=[["i-0a"], ["i-0b"]],
                delete_options=dict(wait_timeout=120, force=True), post_drain_wait=5, run_id="run-1",
                lease_id="lease-1", wait_timeout=300, node_ready_timeout=300, region="us-west-2", kubeconfig="/k")
    args.update(overrides)
    result = ArgumentSpecValidator(full_argument_spec()).validate(args)
    assert not result.error_messages
    return result.validated_parameters


def test_the_documentation_matches_the_argument_spec():
    assert_docs_match_spec(node_replace, full_argument_spec())


def test_a_batch_drains_as_node_drain_did_in_batch_yml():
    drain = step_options(params(), check_mode=False).drain.of_instances(["i-0a", "i-0c"])
    assert (drain.instance_ids, drain.state, drain.engine.exclude_from_load_balancers) == (("i-0a", "i-0c"), "drain", True)
    assert (drain.cluster_name, drain.nodegroup_name, drain.asg_name) == ("prod", "workers", "workers-asg")
    assert (drain.lease_id, drain.engine.run_id, drain.engine.post_drain_wait) == ("lease-1", "run-1", 5)
    assert drain.engine.drain_timeout == 120 and drain.engine.force is True
    assert drain.engine.ignore_daemonsets is True and drain.engine.eviction_concurrency == 10


def test_a_batch_terminates_as_asg_instance_terminate_did_in_batch_yml():
    terminate = step_options(params(wait_for_replacements=True), check_mode=False).terminate.of_round(["i-0a"], False)
    assert terminate.instance_ids == ("i-0a",) and terminate.decrement is False
    assert (terminate.wait, terminate.wait_for_replacements) == (True, True)
    assert (terminate.wait_timeout, terminate.node_ready_timeout) == (300, 300)


def test_how_a_batch_terminates_comes_with_the_batch():
    assert replace_steps.termination_rounds(Batch(["i-0a"], decrement=True)) == [(["i-0a"], True)]
    assert replace_steps.termination_rounds(Batch(["i-0a", "i-0b"], decrement_ids=["i-0b"])) == [
        (["i-0b"], True), (["i-0a"], False)]


def test_issue26_item4_the_steps_options_are_typed_once_and_no_argument_spec_runs_per_batch(monkeypatch):
    """Issue 26 item 4: the options of the phase's steps are built and checked once (step_options, as kubectl
    builds its drain.Helper once); a batch's drain and termination take them typed, with the batch's instances,
    and no ArgumentSpecValidator runs on a params dict per batch."""
    steps = step_options(params(), check_mode=False)
    asked = []

    def drain(ctx, step, prepared=None, on_emptied=None):
        asked.append(step)
        return drain_step.DrainOutcome(None, dict((i, None) for i in step.instance_ids), 0)

    def start_termination(ctx, step, hooks=None):
        asked.append(step)
        return SimpleNamespace(instance_ids=list(step.instance_ids), group=None, never_joined=[],
                               availability_zones={}, group_per_az={})

    monkeypatch.setattr(drain_step, "drain", drain)
    monkeypatch.setattr(terminate_step, "start_termination", start_termination)
    monkeypatch.setattr(replace_steps, "check_target_unmoved", lambda ctx, group, asg=None: None)
    monkeypatch.setattr(step_context, "ArgumentSpecValidator", lambda spec: pytest.fail("argument spec run per batch"))
    loop, _next, _gate, _judge = replace_steps.replace_loop(
        params(), steps, clients=SimpleNamespace(lease_heartbeats={}), check_mode=False, diff=False, warn=[].append,
        log=lambda line: None, progress=[].append, next_batch=lambda state: None, node_names={},
        safe_points=SafePoints([], None, None))
    for ids in (["i-0a"], ["i-0b", "i-0c"]):
        drained = loop.drain(Batch(ids))
        assert dict(drained.instances) == dict((i, None) for i in ids)
        assert [i for r in loop.start(Batch(ids)).rounds for i in r.instance_ids] == ids
    assert [type(step) for step in asked] == [drain_step.DrainStep, terminate_step.TerminateStep] * 2
    assert [step.instance_ids for step in asked] == [("i-0a",)] * 2 + [("i-0b", "i-0c")] * 2
    assert all(step.engine is steps.drain.engine for step in asked[::2])


def test_issue26_item4_a_drain_option_out_of_range_is_refused_once_before_any_change():
    with pytest.raises(UpgradeError) as refused:
        step_options(params(delete_options=dict(wait_timeout=0)), check_mode=False)
    assert refused.value.code == "InvalidParameter" and "drain_timeout" in refused.value.msg


def test_a_refused_second_round_names_the_first_rounds_instances_as_accepted():
    """SPEC B1: the decrementing round went; the replacing one was refused. The failure says which went."""
    class Accepted:
        def __init__(self, ids):
            self.instance_ids = ids

    answers = iter([Accepted(["i-0a"]), UpgradeError("UpgradeInProgress", "lease lost")])

    def start_termination(ctx, step, hooks=None):
        answer = next(answers)
        if isinstance(answer, Exception):
            raise answer
        assert step.decrement is True  # the decrementing round first
        return answer

    loop, _next, _gate, _judge = replace_steps.replace_loop(
        params(), step_options(params(), False), clients=SimpleNamespace(lease_heartbeats={}), check_mode=False,
        diff=False, warn=[].append, log=lambda line: None, progress=[].append, next_batch=lambda state: None,
        node_names={}, safe_points=SafePoints([], None, None))
    with mock.patch.object(terminate_step, "start_termination", start_termination):
        with pytest.raises(StepFailed) as failed:
            loop.start(Batch(["i-0a", "i-0b"], decrement_ids=["i-0a"]))
    assert failed.value.error.code == "UpgradeInProgress" and failed.value.accepted == ["i-0a"]


def test_issue26_item2_a_surge_step_launches_for_the_old_instances_it_will_take_and_takes_them_from_the_group():
    """The launch journals the capacity the step's terminations will leave (SPEC C3) from the step's count, as none
    is chosen yet; then the step takes its old instances from the group as the launch left it: the one leaving and
    the one gone from the group first, then where the instances are most (us-west-2a)."""
    steps = [dict(desired_capacity=5, launch=1, instance_ids=["i-0a", "i-0b"]),
             dict(desired_capacity=4, launch=1, instance_ids=["i-0c"])]
    batch = Batch([], decrement=True, desired_capacity=5, launch=1,
                  choose_old=dict(candidates=["i-0a", "i-0b", "i-0c", "i-0d", "i-0g"], count=3, end_size=4,
                                  next_launch=0))
    seen, lines = [], []
    with mock.patch.object(replace_steps.surge_step, "run",
                           side_effect=lambda ctx: seen.append(ctx.params) or dict(surge=dict(new_nodes=[{}]))):
        replace_steps.launch_new_nodes(replace_steps.step_options(params(batches=None, steps=steps), False).surge,
                                       batch, SimpleNamespace(with_params=lambda step: SimpleNamespace(params=step)),
                                       lines.append)
    assert (seen[0]["mode"], seen[0]["desired_capacity"], seen[0]["pending_decrement"]) == ("desired", 5, 3)
    members = [dict(InstanceId=i, AvailabilityZone=zone, LifecycleState=state) for i, zone, state in (
        ("i-0a", "us-west-2b", "InService"), ("i-0b", "us-west-2a", "InService"), ("i-0c", "us-west-2a", "InService"),
        ("i-0d", "us-west-2a", "Terminating"), ("i-0n", "us-west-2b", "Pending"))]
    autoscaling = mock.Mock()
    group = SimpleNamespace(asg_name="workers-asg")
    with mock.patch.object(replace_steps, "describe_asg", return_value=dict(
            Instances=members, AvailabilityZones=["us-west-2a", "us-west-2b"])) as described:
        replace_steps.take_old_instances(SimpleNamespace(aws=lambda service: autoscaling), group, batch, lines.append)
    described.assert_called_once_with(autoscaling, "workers-asg")
    assert (batch.instance_ids, batch.decrement_ids) == (["i-0d", "i-0g", "i-0b"], ["i-0d", "i-0g", "i-0b"])
    assert lines[-1] == ("replacing i-0d, i-0g, i-0b, chosen from the group as the launch left it (instances per "
                         "AZ: us-west-2a 2, us-west-2b 2)")


def test_issue27_item3_the_drains_mark_their_cordons_with_the_upgrades_run_id():
    """The role gives no run_id: the drains marked the nodes they cordoned with an id of their own
    ("drain-<time>"), so nothing could tell the upgrade's cordons (an abort gives them back). The journal's run id,
    resolved with the plan, is theirs now; every other option stays."""
    steps = step_options(params(run_id=None), check_mode=False)
    assert steps.drain.engine.run_id.startswith("drain-")
    ours = steps.of_run("run-9")
    assert (ours.drain.run_id, ours.drain.engine.run_id) == ("run-9", "run-9")
    assert ours.drain.engine.as_dict() == dict(steps.drain.engine.as_dict(), run_id="run-9")
    assert ours.terminate == steps.terminate and steps.of_run(None) is steps
