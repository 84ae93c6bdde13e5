# -*- coding: utf-8 -*-
# Copyright: Contributors to the eksops.nodegroup project
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""asg_instance_terminate run in-process against moto (SPEC U5, U6, C3) and its replacement condition."""

from __future__ import annotations

import datetime

import pytest
from moto import mock_aws

from ansible_collections.eksops.nodegroup.plugins.module_utils.nodegroup import kinds
from ansible_collections.eksops.nodegroup.plugins.module_utils.members.group_watch import GroupSnapshot
from ansible_collections.eksops.nodegroup.plugins.module_utils.nodegroup.journal import Journal, write_journal
from ansible_collections.eksops.nodegroup.plugins.module_utils.steps import asg_instance_terminate as terminate_step
from ansible_collections.eksops.nodegroup.plugins.module_utils.host.module import EksopsModule
from ansible_collections.eksops.nodegroup.plugins.modules import asg_instance_terminate

from ..moto_nodegroup import ASG_NAME, CLUSTER, NODEGROUP, mutating, run_module_in_process
from .asg_world import sizes, upgraded_world

BASE = dict(cluster_name=CLUSTER, nodegroup_name=NODEGROUP, kubeconfig="/unused", wait_timeout=30)


@pytest.fixture
def world():
    with mock_aws():
        yield upgraded_world(desired=4)


@pytest.fixture
def undrained(monkeypatch):
    """The cluster side of the U5 check (tested with a fake API in module_utils/test_nodes.py): every node drained
    unless a test lists problems here."""
    problems = []
    checked = []
    nodeless = []

    def fake_termination_check(core_v1, instance_ids, node_selector=None):
        checked.append((list(instance_ids), node_selector))
        return dict(problems=[p for p in problems if p["instance_id"] in instance_ids],
                    nodeless=[i for i in instance_ids if i in nodeless], requests=0)

    state = dict(problems=problems, checked=checked, nodeless=nodeless, group_nodes=["ip-10-0-0-1"])
    monkeypatch.setattr(terminate_step, "termination_check", fake_termination_check)
    monkeypatch.setattr(terminate_step, "list_nodegroup_nodes", lambda core_v1, group: state["group_nodes"])
    monkeypatch.setattr(EksopsModule, "core_v1", lambda self: None)
    return state


@pytest.fixture
def run(capsys, undrained):
    def run_it(check=False, diff=False, **args):
        return run_module_in_process(asg_instance_terminate.main, dict(BASE, **args), capsys, check=check, diff=diff)
    return run_it


def members(world):
    return sorted(i["InstanceId"] for i in world.asg()["Instances"])


def ec2_state(world, instance_id):
    return world.ec2.describe_instances(InstanceIds=[instance_id])["Reservations"][0]["Instances"][0]["State"]["Name"]


@pytest.mark.parametrize("ids,extra,parameter", [
    (["i-0123456789abcdef0"], {}, "instance_ids"),
    (["bogus"], {}, "instance_ids"),
    ([], {}, "instance_ids"),
    (["i-0123456789abcdef0"], dict(should_decrement_desired_capacity=True, wait_for_replacements=True),
     "wait_for_replacements"),
    (["i-0123456789abcdef0"], dict(node_ready_timeout=-1), "node_ready_timeout"),
])
def test_bad_input_names_the_parameter_and_changes_nothing(world, run, ids, extra, parameter):
    before = (sizes(world), members(world))
    args = dict(dict(should_decrement_desired_capacity=False), **extra)
    result = run(instance_ids=ids, **args)
    assert result["failed"] is True and parameter in result["msg"]
    if parameter == "instance_ids" and ids:
        assert ids[0] in result["msg"]
    assert (sizes(world), members(world)) == before


def test_instance_outside_the_group_is_named(world, run):
    stranger = world.ec2.run_instances(ImageId=world.old_ami, MinCount=1, MaxCount=1)["Instances"][0]["InstanceId"]
    victim = members(world)[0]
    result = run(instance_ids=[victim, stranger], should_decrement_desired_capacity=False)
    assert result["failed"] is True and result["code"] == "InvalidParameter"
    assert stranger in result["msg"] and victim not in result["msg"]
    assert ec2_state(world, victim) == "running"


def test_check_mode_reports_the_plan(world, run):
    victim = members(world)[0]
    result = run(check=True, diff=True, instance_ids=[victim], should_decrement_desired_capacity=True)
    assert not result.get("failed"), result
    assert result["changed"] is True
    assert result["termination"]["after"]["desired_capacity"] == 3
    assert victim in result["diff"]["before"]["instance_ids"] and victim not in result["diff"]["after"]["instance_ids"]
    assert "diff" not in run(check=True, instance_ids=[victim], should_decrement_desired_capacity=True)  # diff mode only
    assert sizes(world) == (0, 12, 4) and ec2_state(world, victim) == "running"


def test_decrement_terminates_and_is_idempotent(world, run):
    victim = members(world)[0]
    result = run(instance_ids=[victim], should_decrement_desired_capacity=True)
    assert not result.get("failed"), result
    assert result["changed"] is True and result["termination"]["terminated"] == [victim]
    assert sizes(world) == (0, 12, 3) and victim not in members(world)
    assert ec2_state(world, victim) == "terminated"
    again = run(instance_ids=[victim], should_decrement_desired_capacity=True)
    assert not again.get("failed"), again
    assert again["changed"] is False and again["termination"]["already_terminated"] == [victim]
    assert sizes(world) == (0, 12, 3)


def test_U5_an_undrained_instance_is_refused_before_anything_changes(world, run, undrained):
    before = members(world)
    victims = before[:2]
    undrained["problems"].append(dict(instance_id=victims[1], node="node-b", cordoned=False, pods=["default/web-1"]))
    result = run(instance_ids=victims, should_decrement_desired_capacity=True)
    assert result["failed"] is True and result["code"] == "PodEvictionFailure"
    assert victims[1] in result["msg"] and "node-b" in result["msg"] and "default/web-1" in result["msg"]
    assert "not cordoned" in result["msg"] and victims[0] not in result["msg"]
    assert result["undrained"] == undrained["problems"]
    # a plain self-managed group labels no node: the nodes are found by providerID among all (K1, K2)
    assert undrained["checked"] == [(victims, None)]
    assert sizes(world) == (0, 12, 4) and members(world) == before
    assert all(ec2_state(world, v) == "running" for v in victims)


def test_U5_check_mode_warns_about_an_undrained_instance(world, run, undrained):
    victim = members(world)[0]
    undrained["problems"].append(dict(instance_id=victim, node="node-a", cordoned=True, pods=["default/web-1"]))
    result = run(check=True, instance_ids=[victim], should_decrement_desired_capacity=True)
    assert not result.get("failed"), result
    assert any(victim in str(w) and "default/web-1" in str(w) for w in result["warnings"]), result["warnings"]
    assert ec2_state(world, victim) == "running"


def test_decrement_below_min_size_needs_a_journal(world, run):
    world.autoscaling.update_auto_scaling_group(AutoScalingGroupName=ASG_NAME, MinSize=4)
    victims = members(world)[:2]
    refused = run(instance_ids=victims, should_decrement_desired_capacity=True)
    assert refused["failed"] is True and "should_decrement_desired_capacity" in refused["msg"]
    assert sizes(world) == (4, 12, 4)

    write_journal(world.autoscaling, ASG_NAME, Journal.start(phase="upgrade", original_min_size=4,
                                                             desired_capacity_set=4))
    result = run(instance_ids=victims, should_decrement_desired_capacity=True)
    assert not result.get("failed"), result
    assert sizes(world) == (2, 12, 2)
    journal = Journal.from_tags(world.asg()["Tags"])
    assert journal.desired_capacity_set == 2 and journal.original_min_size == 4  # C3 bookkeeping
    assert journal.sizes_set == {"min_size": 2}  # issue 29 item 4: the restore tells it from a MinSize set by hand


def test_without_decrement_the_journal_is_untouched(world, run):
    write_journal(world.autoscaling, ASG_NAME, Journal.start(phase="upgrade", desired_capacity_set=4))
    result = run(instance_ids=members(world)[:1], should_decrement_desired_capacity=False)
    assert not result.get("failed"), result
    assert Journal.from_tags(world.asg()["Tags"]).desired_capacity_set == 4


def test_an_instance_without_a_node_is_terminated_and_said_to_have_never_joined(
        world, run, undrained, monkeypatch):
    """K2/K4: with the cluster proven, an instance no node names never joined it; it is terminated without a
    drain, and the result says whether it was still booting or past node_ready_timeout."""
    victims = members(world)[:2]
    undrained["nodeless"].extend(victims)
    result = run(instance_ids=victims, should_decrement_desired_capacity=True, node_ready_timeout=600)
    assert not result.get("failed"), result
    never_joined = result["termination"]["never_joined"]
    assert sorted(i["instance_id"] for i in never_joined) == sorted(victims)
    assert all("has not joined the cluster yet" in i["reason"] for i in never_joined)  # just launched by moto
    assert sum(victim in str(w) for victim in victims for w in result["warnings"]) == 2
    assert sorted(result["termination"]["terminated"]) == sorted(victims)

    later = terminate_step.utc_now() + datetime.timedelta(hours=1)
    monkeypatch.setattr(terminate_step, "utc_now", lambda: later)
    victim = members(world)[0]
    undrained["nodeless"].append(victim)
    result = run(instance_ids=[victim], should_decrement_desired_capacity=True, node_ready_timeout=600)
    [never] = result["termination"]["never_joined"]
    assert never["instance_id"] == victim and "never joined the cluster" in never["reason"]
    assert never["launched_seconds_ago"] >= 3600


def test_instances_without_a_node_in_a_group_without_any_are_refused(world, run, undrained):
    """No instance of the group has a node in the API in use: it is not the group's cluster (an untagged group of
    another cluster, a wrong kubeconfig); its instances must not pass for nodes that never joined (issue 9)."""
    victims = members(world)[:2]
    undrained["nodeless"].extend(victims)
    undrained["group_nodes"] = []
    before = members(world)
    result = run(instance_ids=victims, should_decrement_desired_capacity=True)
    assert result.get("failed") and result["code"] == "ClusterUnreachable", result
    assert "changed nothing" in result["msg"] and result["instance_ids"] == victims
    assert members(world) == before and world.asg()["DesiredCapacity"] == 4


def test_instances_with_their_nodes_are_not_reported_as_never_joined(world, run):
    result = run(instance_ids=members(world)[:1], should_decrement_desired_capacity=True)
    assert not result.get("failed"), result
    assert result["termination"]["never_joined"] == []


def test_an_eksctl_groups_nodes_are_looked_for_by_its_label_first(capsys, undrained):
    with mock_aws():
        world = upgraded_world(desired=2, kind=kinds.SELF_MANAGED_EKSCTL, convention=None)
        victim = members(world)[0]
        result = run_module_in_process(asg_instance_terminate.main, dict(
            BASE, instance_ids=[victim], should_decrement_desired_capacity=True), capsys)
    assert not result.get("failed"), result
    assert undrained["checked"] == [([victim], "alpha.eksctl.io/nodegroup-name=" + NODEGROUP)]


def test_k3_a_managed_node_group_is_refused_before_any_change(capsys, undrained):
    with mock_aws():
        world = upgraded_world(desired=2, kind=kinds.MANAGED)
        before = (sizes(world), members(world))
        calls = []
        result = run_module_in_process(asg_instance_terminate.main, dict(
            BASE, instance_ids=members(world)[:1], should_decrement_desired_capacity=True), capsys, aws_calls=calls)
        assert (sizes(world), members(world)) == before
        assert all(ec2_state(world, i) == "running" for i in before[1])
    assert result["failed"] is True and (result["code"], result["parameter"]) == ("InvalidParameter", "nodegroup_name")
    assert NODEGROUP in result["msg"] and world.asg_name in result["msg"]
    assert mutating(calls) == [] and undrained["checked"] == []


# ---------------------------------------------------------------------------- replacement condition

def record(instance_id, state="InService", ready=True, node=True):
    return dict(instance_id=instance_id, availability_zone="us-west-2a", lifecycle_state=state, node_name=(
        "n-" + instance_id) if node else None, ready=ready)


def test_replacements_ready_needs_the_group_back_at_desired_with_ready_nodes():
    condition = terminate_step.ReplacementsReady(["i-1", "i-2"], ["i-2"])
    asg = {"DesiredCapacity": 2}
    waiting = GroupSnapshot(asg, [record("i-1"), record("i-2", state="Terminating")], [], [])
    assert condition(waiting) is False
    assert condition.problems(waiting) == ["1 replacement instance(s) not launched yet"]
    booting = GroupSnapshot(asg, [record("i-1"), record("i-3", ready=False)], [], [])
    assert condition.problems(booting) == ["i-3 (us-west-2a): node is not Ready"]
    assert condition(GroupSnapshot(asg, [record("i-1"), record("i-3")], [], [])) is True


def terminated_by_someone_else_first(world, monkeypatch, victim):
    """Another actor (a concurrent run, a scale-in) terminates ``victim`` between the module's look at the group
    and its TerminateInstanceInAutoScalingGroup call, which AWS then refuses as for any instance in no group."""
    from ansible_collections.eksops.nodegroup.plugins.module_utils.aws import session as aws
    from ansible_collections.eksops.nodegroup.plugins.module_utils.aws import autoscaling as autoscaling_api
    from botocore.exceptions import ClientError

    real = autoscaling_api.terminate_instance_in_auto_scaling_group

    def racing(autoscaling, instance_id, decrement):
        if instance_id != victim:
            return real(autoscaling, instance_id, decrement)
        world.autoscaling.detach_instances(InstanceIds=[victim], AutoScalingGroupName=ASG_NAME,
                                           ShouldDecrementDesiredCapacity=True)
        world.ec2.terminate_instances(InstanceIds=[victim])
        with aws.translate_aws_errors("terminate instance %s through its Auto Scaling group" % instance_id):
            raise ClientError({"Error": {"Code": "ValidationError", "Message": "Instance Id not found - No managed "
                                         "instance found for instance ID: %s" % victim}},
                              "TerminateInstanceInAutoScalingGroup")

    monkeypatch.setattr(autoscaling_api, "terminate_instance_in_auto_scaling_group", racing)


def test_item11_an_instance_terminated_by_someone_else_meanwhile_is_already_gone(world, run, monkeypatch):
    """Issue 10 item 11: the instance is gone when the termination request arrives (AWS: ValidationError "No managed
    instance found"): reported as already terminated, not an error, and not counted as this run's decrement."""
    write_journal(world.autoscaling, ASG_NAME, Journal.start(phase="upgrade", desired_capacity_set=4))
    raced, other = members(world)[:2]
    terminated_by_someone_else_first(world, monkeypatch, raced)
    result = run(instance_ids=[raced, other], should_decrement_desired_capacity=True)
    assert not result.get("failed"), result
    report = result["termination"]
    assert report["terminated"] == [other] and report["already_terminated"] == [raced]
    assert report["after"]["desired_capacity"] == 3, "only this run's own termination is its decrement"
    assert Journal.from_tags(world.asg()["Tags"]).desired_capacity_set == 3
    assert result["changed"] is True


def test_item11_only_a_raced_instance_changes_nothing(world, run, monkeypatch):
    raced = members(world)[0]
    terminated_by_someone_else_first(world, monkeypatch, raced)
    result = run(instance_ids=[raced], should_decrement_desired_capacity=False)
    assert not result.get("failed"), result
    assert result["changed"] is False and result["termination"]["already_terminated"] == [raced]


def test_item11_an_id_ec2_does_not_know_is_refused_saying_so(world, run):
    result = run(instance_ids=["i-0123456789abcdef0"], should_decrement_desired_capacity=False)
    assert result["failed"] is True and result["code"] == "InvalidParameter"
    assert "EC2 does not know i-0123456789abcdef0" in result["msg"]


def test_item14_the_groups_termination_hooks_are_read_once_and_returned(world, run):
    world.autoscaling.put_lifecycle_hook(
        LifecycleHookName="drain", AutoScalingGroupName=ASG_NAME,
        LifecycleTransition="autoscaling:EC2_INSTANCE_TERMINATING", HeartbeatTimeout=300, DefaultResult="CONTINUE")
    world.autoscaling.put_lifecycle_hook(
        LifecycleHookName="warm", AutoScalingGroupName=ASG_NAME,
        LifecycleTransition="autoscaling:EC2_INSTANCE_LAUNCHING")
    result = run(check=True, instance_ids=members(world)[:1], should_decrement_desired_capacity=False)
    assert not result.get("failed"), result
    [hook] = result["termination"]["lifecycle_hooks"]
    assert (hook["name"], hook["heartbeat_timeout"], hook["default_result"]) == ("drain", 300, "CONTINUE")
    done = run(instance_ids=members(world)[:1], should_decrement_desired_capacity=False)
    assert not done.get("failed"), done
    assert [h["name"] for h in done["termination"]["lifecycle_hooks"]] == ["drain"]
    assert done["termination"]["lifecycle_hook_waits"] == [], "moto does not hold instances"


def test_item14_hooks_are_not_read_without_a_wait(world, run, monkeypatch):
    from ansible_collections.eksops.nodegroup.plugins.module_utils.steps import asg_instance_terminate as module

    monkeypatch.setattr(module, "termination_hooks", lambda *args: pytest.fail("hooks read without a wait"))
    result = run(instance_ids=members(world)[:1], should_decrement_desired_capacity=False, wait=False)
    assert not result.get("failed"), result
    assert result["termination"]["lifecycle_hooks"] == []


def test_item14_hooks_the_caller_read_are_not_read_again(world, capsys, undrained, monkeypatch):
    """Issue 11 item 4: node_replace reads them during the post-drain wait and gives them to the termination."""
    from ansible_collections.eksops.nodegroup.plugins.module_utils.steps import asg_instance_terminate as module

    monkeypatch.setattr(module, "termination_hooks", lambda *args: pytest.fail("hooks read again"))
    given = [dict(name="drain", heartbeat_timeout=300, global_timeout=None, default_result="CONTINUE")]
    original = module.start_termination
    monkeypatch.setattr(module, "start_termination", lambda ctx, step, hooks=None: original(ctx, step, given))
    result = run_module_in_process(asg_instance_terminate.main, dict(
        cluster_name=CLUSTER, nodegroup_name=NODEGROUP, kubeconfig="/unused", instance_ids=members(world)[:1],
        should_decrement_desired_capacity=False), capsys)
    assert not result.get("failed"), result
    assert result["termination"]["lifecycle_hooks"] == given


def test_issue29_a_launch_template_version_set_back_by_hand_mid_upgrade_stops_the_batch_before_any_change(
        world, run, undrained):
    """Issue 29 item 4: the group was pointed back at version 1 during the upgrade to world.target_version. The
    batch's termination stops with LaunchTemplateVersionChanged, naming both versions, before any change (its
    replacements would be old nodes); before, it went on and the run ended blaming the new instances."""
    write_journal(world.autoscaling, ASG_NAME, Journal.start(
        phase="upgrade", desired_capacity_set=4, launch_template_id=world.lt_id,
        target_launch_template_version=str(world.target_version)))
    world.autoscaling.update_auto_scaling_group(AutoScalingGroupName=ASG_NAME, LaunchTemplate=dict(
        LaunchTemplateId=world.lt_id, Version="1"))
    before = (sizes(world), members(world), world.tags())
    result = run(instance_ids=members(world)[:1], should_decrement_desired_capacity=False)
    assert result["failed"] is True and result["code"] == "LaunchTemplateVersionChanged", result
    assert "launches from launch template %s version 1, no longer from %s version %s" % (
        world.lt_id, world.lt_id, world.target_version) in result["msg"]
    assert "run the same job again" in result["msg"]
    assert (result["launch_template_version"], result["target_launch_template_version"]) == (
        "1", str(world.target_version))
    assert (sizes(world), members(world), world.tags()) == before and undrained["checked"] == []


def test_issue29_the_group_on_the_journals_target_through_an_alias_goes_on(world, run, undrained):
    """$Latest resolving to the journal's target is the target (the infrastructure-as-code workflow leaves an alias
    on the group)."""
    write_journal(world.autoscaling, ASG_NAME, Journal.start(
        phase="upgrade", desired_capacity_set=4, launch_template_id=world.lt_id,
        target_launch_template_version=str(world.target_version)))
    world.autoscaling.update_auto_scaling_group(AutoScalingGroupName=ASG_NAME, LaunchTemplate=dict(
        LaunchTemplateId=world.lt_id, Version="$Latest"))
    result = run(instance_ids=members(world)[:1], should_decrement_desired_capacity=False, wait=False)
    assert not result.get("failed"), result


def test_issue25_item1_resume_the_capacity_the_decrements_leave_is_recorded_before_the_terminations(
        world, run, monkeypatch):
    """Issue 25 item 1 (SPEC C3, W5): a run killed among its decrementing terminations leaves the group between the
    capacity set and the one they leave; the journal says so before the first termination, and says the capacity
    set once they are accepted, so a rerun keeps it (asg_ops.resumed_capacity) and never takes it for the
    autoscaler."""
    write_journal(world.autoscaling, ASG_NAME, Journal.start(phase="upgrade", desired_capacity_set=4))
    seen = []
    terminate_or_gone = terminate_step.terminate_or_gone

    def spy(autoscaling, ec2, name, instance_id, decrement):
        journal = Journal.from_tags(world.asg()["Tags"])
        seen.append((journal.desired_capacity_set, journal.desired_capacity_pending))
        return terminate_or_gone(autoscaling, ec2, name, instance_id, decrement)

    monkeypatch.setattr(terminate_step, "terminate_or_gone", spy)
    result = run(instance_ids=members(world)[:2], should_decrement_desired_capacity=True)
    assert not result.get("failed"), result
    assert seen == [(4, 2), (4, 2)]
    journal = Journal.from_tags(world.asg()["Tags"])
    assert (journal.desired_capacity_set, journal.desired_capacity_pending) == (2, None)
