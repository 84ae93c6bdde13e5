# -*- coding: utf-8 -*-
# Copyright: Contributors to the eksops.nodegroup project
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""asg_surge run in-process against moto, without waiting (SPEC U2, A1, C3), and its U3 condition."""

from __future__ import annotations

import pytest
from moto import mock_aws

from ansible_collections.eksops.nodegroup.plugins.module_utils.nodegroup import kinds
from ansible_collections.eksops.nodegroup.plugins.module_utils.members.group_watch import GroupSnapshot
from ansible_collections.eksops.nodegroup.plugins.module_utils.aws import autoscaling as autoscaling_api
from ansible_collections.eksops.nodegroup.plugins.module_utils.nodegroup.journal import Journal, write_journal
from ansible_collections.eksops.nodegroup.plugins.module_utils.steps import asg_surge as surge_step
from ansible_collections.eksops.nodegroup.plugins.module_utils.nodegroup.discovery import NodegroupRef
from ansible_collections.eksops.nodegroup.plugins.modules import asg_surge

from ..moto_nodegroup import ASG_NAME, CLUSTER, NODEGROUP, mutating, run_step_in_process
from .asg_world import sizes, suspended, upgraded_world

BASE = dict(cluster_name=CLUSTER, nodegroup_name=NODEGROUP, kubeconfig="/unused", wait=False)
A1 = ["AZRebalance", "AlarmNotification", "ScheduledActions", "ReplaceUnhealthy", "InstanceRefresh"]


@pytest.fixture
def world():
    with mock_aws():
        yield upgraded_world()


@pytest.fixture
def run():
    def run_it(check=False, diff=False, **args):
        return run_step_in_process(surge_step, asg_surge, dict(BASE, **args), check=check, diff=diff)
    return run_it


@pytest.mark.parametrize("args,parameter", [
    (dict(max_unavailable=0), "max_unavailable"),
    (dict(max_unavailable=101), "max_unavailable"),
    (dict(max_unavailable_percentage=0), "max_unavailable_percentage"),
    (dict(max_unavailable_percentage=101), "max_unavailable_percentage"),
    (dict(asg_name="missing"), "asg_name"),
    (dict(mode="explicit", surge=-2), "surge"),
    (dict(mode="desired", desired_capacity=-1), "desired_capacity"),
    (dict(suspend_processes=["Launch"]), "suspend_processes"),
    (dict(wait_timeout=0), "wait_timeout"),
    (dict(pending_decrement=-1), "pending_decrement"),
    (dict(surge_sizing="some"), "surge_sizing"),
    (dict(mode="desired", desired_capacity=5, pending_decrement=6), "pending_decrement"),
])
def test_bad_input_fails_naming_the_parameter_and_changes_nothing(world, run, args, parameter):
    before = (sizes(world), world.tags())
    result = run(**args)
    assert result["failed"] is True
    assert parameter in result["msg"]
    assert (sizes(world), world.tags()) == before


def test_mutually_exclusive_parallelism_options(world, run):
    result = run(max_unavailable=2, max_unavailable_percentage=50)
    assert result["failed"] is True and "max_unavailable" in result["msg"]


def test_u2_check_mode_plans_without_touching_the_group(world, run):
    result = run(check=True, diff=True)
    assert not result.get("failed"), result
    assert result["changed"] is True
    plan = result["surge"]
    assert plan["surge"] == 6  # 3 AZs: max(2 x 3, 1)
    assert plan["after"] == dict(min_size=0, max_size=12, desired_capacity=10)
    assert plan["target"] == dict(launch_template_id=world.lt_id, launch_template_version=world.target_version,
                                  image_id=world.new_ami, override_images={})
    assert result["diff"]["before"]["desired_capacity"] == 4 and result["diff"]["after"]["desired_capacity"] == 10
    assert "diff" not in run(check=True)  # only in diff mode
    assert sizes(world) == (0, 12, 4) and suspended(world) == []
    assert not any(k.startswith("eksops.nodegroup/") for k in world.tags())


def test_u2_a1_journal_first_then_suspend_then_scale_and_rerun_is_idempotent(world, run):
    world.autoscaling.suspend_processes(AutoScalingGroupName=ASG_NAME, ScalingProcesses=["AZRebalance"])
    result = run(max_unavailable=8)
    assert not result.get("failed"), result
    assert result["changed"] is True
    assert sizes(world) == (0, 12, 12)  # surge max(6, 8) = 8
    journal = Journal.from_tags(world.asg()["Tags"])
    assert (journal.original_min_size, journal.original_max_size, journal.original_desired_capacity) == (0, 12, 4)
    # the scale-up is done (no wait asked): the journal says the old nodes are next
    assert journal.desired_capacity_set == 12 and journal.surge == 8 and journal.phase == "upgrade"
    # AZRebalance was suspended by someone else: not ours to record or resume (A1)
    assert journal.suspended_processes == ["AlarmNotification", "ScheduledActions", "ReplaceUnhealthy", "InstanceRefresh"]
    assert suspended(world) == sorted(A1)
    assert journal.target_image_id == world.new_ami
    assert journal.target_launch_template_version == str(world.target_version)

    # Issue 10 item 22: the old instances were protected from scale-in before the group grew; without a wait the
    # new ones are protected by the next run (with a wait, by this one once they are Ready).
    assert journal.scale_in_protection == "ours"
    protected = [i["ProtectedFromScaleIn"] for i in world.asg()["Instances"]]
    assert protected.count(True) == 4

    run(max_unavailable=8)
    assert all(i["ProtectedFromScaleIn"] for i in world.asg()["Instances"])
    again = run(max_unavailable=8)
    assert not again.get("failed") and again["changed"] is False
    assert sizes(world) == (0, 12, 12)
    assert Journal.from_tags(world.asg()["Tags"]) == journal


def test_max_size_is_raised_only_when_the_surge_needs_it(world, run):
    result = run(mode="explicit", surge=10)
    assert not result.get("failed"), result
    assert sizes(world) == (0, 14, 14)
    assert result["surge"]["before"]["max_size"] == 12
    # Issue 29 item 4: recorded, so that the restore can tell it from a MaxSize set by hand.
    assert Journal.from_tags(world.asg()["Tags"]).sizes_set == {"max_size": 14}


def test_issue29_a_max_size_the_surge_leaves_alone_is_not_recorded_as_set(world, run):
    assert not run(max_unavailable=8).get("failed")
    assert sizes(world) == (0, 12, 12) and Journal.from_tags(world.asg()["Tags"]).sizes_set is None


def test_crash_after_the_journal_resumes_without_double_surge(world, run):
    journal = Journal.start(phase="scale_up", original_min_size=0, original_max_size=12, original_desired_capacity=4,
                            desired_capacity_set=10, surge=6, suspended_processes=A1)
    write_journal(world.autoscaling, ASG_NAME, journal)
    result = run()
    assert not result.get("failed"), result
    assert sizes(world) == (0, 12, 10)
    assert suspended(world) == sorted(A1)
    assert Journal.from_tags(world.asg()["Tags"]).run_id == journal.run_id


def test_surge_is_from_the_original_size_not_the_current_one(world, run):
    assert not run().get("failed")
    # a later rerun in a desired-mode step reads original_desired_capacity from the journal
    result = run(mode="desired", desired_capacity=11)
    assert not result.get("failed"), result
    assert sizes(world)[2] == 11 and result["surge"]["surge"] == 7


def test_c3_refuses_when_the_desired_capacity_was_raised_by_someone_else(world, run):
    assert not run().get("failed")
    world.autoscaling.set_desired_capacity(AutoScalingGroupName=ASG_NAME, DesiredCapacity=11)
    before = (sizes(world), world.tags())
    result = run()
    assert result["failed"] is True and result["code"] == "ClusterAutoscalerActive"
    assert (sizes(world), world.tags()) == before


def test_journal_phase_scale_up_before_the_change_then_upgrade(world, run, monkeypatch):
    """DEVELOPERS resume rule, SPEC U2: phase scale_up is on the group before the sizes change; once the scale-up
    is done the journal moves on to upgrade (never back), so a rerun knows where it stopped."""
    seen = []
    update_sizes = autoscaling_api.update_sizes

    def spy(autoscaling, name, **sizes_):
        seen.append(Journal.from_tags(world.asg()["Tags"]).phase)
        return update_sizes(autoscaling, name, **sizes_)

    monkeypatch.setattr(autoscaling_api, "update_sizes", spy)
    assert not run().get("failed")
    assert seen == ["scale_up"]
    assert Journal.from_tags(world.asg()["Tags"]).phase == "upgrade"
    # a later surge step keeps the phase where it is
    assert not run(mode="desired", desired_capacity=11).get("failed")
    assert Journal.from_tags(world.asg()["Tags"]).phase == "upgrade"


def test_c3_pending_decrement_records_the_capacity_the_step_terminations_leave(world, run):
    """SPEC C3, S3: a surge step that will terminate 2 old nodes with decrement records, before anything
    changes, the desired capacity they leave; a step without terminations records none."""
    result = run(mode="desired", desired_capacity=6, pending_decrement=2)
    assert not result.get("failed"), result
    journal = Journal.from_tags(world.asg()["Tags"])
    assert (journal.desired_capacity_set, journal.desired_capacity_pending) == (6, 4)
    assert not run(mode="desired", desired_capacity=7).get("failed")
    journal = Journal.from_tags(world.asg()["Tags"])
    assert (journal.desired_capacity_set, journal.desired_capacity_pending) == (7, None)


@pytest.fixture
def one_node_world():
    """One old node, in us-west-2a (in-process moto puts every instance in the group's first subnet), of a group over
    us-west-2a, b and c."""
    with mock_aws():
        yield upgraded_world(desired=1)


def test_b2_per_az_check_mode_shows_the_surge_sized_to_need(one_node_world, run):
    """Issue 11 item 2 (SPEC B2, U3): with one old node in a and none in b and c, Auto Scaling's first two launches
    go to b and c; after them the three AZs tie, and only the fifth launch is sure to have reached a. Check mode
    shows that 5 (EKS's count is max(2 x 3, 1) = 6) and changes nothing."""
    result = run(check=True, surge_sizing="per_az")
    assert not result.get("failed"), result
    assert result["surge"]["surge"] == 5 and result["surge"]["surge_sizing"] == "per_az"
    assert result["surge"]["after"]["desired_capacity"] == 6
    assert run(check=True)["surge"]["surge"] == 6
    assert sizes(one_node_world) == (0, 12, 1)
    assert not any(k.startswith("eksops.nodegroup/") for k in one_node_world.tags())


def test_b2_per_az_is_journalled_and_a_rerun_takes_the_journals_surge(one_node_world, run):
    """Issue 11 item 2: the surge per_az is recorded in the journal; a rerun (the group surged, its instances per AZ
    changed) takes the recorded surge instead of sizing a second one from the surged group."""
    result = run(surge_sizing="per_az")
    assert not result.get("failed"), result
    assert sizes(one_node_world) == (0, 12, 6)
    journal = Journal.from_tags(one_node_world.asg()["Tags"])
    assert (journal.surge, journal.desired_capacity_set, journal.original_desired_capacity) == (5, 6, 1)
    # Without a wait the new instances are protected from scale-in by the next run (issue 10 item 22), no more.
    for _rerun in range(2):
        again = run(surge_sizing="per_az")
        assert not again.get("failed") and again["surge"]["surge"] == 5
        assert sizes(one_node_world) == (0, 12, 6)
        assert Journal.from_tags(one_node_world.asg()["Tags"]) == journal
    assert again["changed"] is False


def test_never_scales_down(world, run):
    result = run(mode="desired", desired_capacity=2)
    assert result["failed"] is True and result["code"] == "InvalidParameter"
    assert "desired_capacity" in result["msg"]
    assert sizes(world) == (0, 12, 4)


def test_k3_a_managed_node_group_is_refused_before_any_change():
    """K3: EKS owns a managed group's Auto Scaling group; asg_surge refuses it, naming nodegroup_name, before any
    call that could change something."""
    with mock_aws():
        world = upgraded_world(kind=kinds.MANAGED)
        before = (sizes(world), world.tags(), suspended(world))
        calls = []
        result = run_step_in_process(surge_step, asg_surge, BASE, aws_calls=calls)
        assert (sizes(world), world.tags(), suspended(world)) == before
    assert result["failed"] is True and result["code"] == "InvalidParameter", result
    assert result["parameter"] == "nodegroup_name" and result["kind"] == kinds.MANAGED
    assert NODEGROUP in result["msg"] and world.asg_name in result["msg"]
    assert "DescribeNodegroup" in calls and mutating(calls) == []


@pytest.mark.parametrize("kind, convention", [(kinds.SELF_MANAGED, "cloudformation"),
                                              (kinds.SELF_MANAGED_EKSCTL, None)])
def test_other_self_managed_kinds_are_surged(kind, convention):
    with mock_aws():
        world = upgraded_world(kind=kind, convention=convention or "terraform")
        result = run_step_in_process(surge_step, asg_surge, BASE)
        assert not result.get("failed"), result
        assert result["surge"]["asg_name"] == world.asg_name and sizes(world) == (0, 12, 10)


def test_k4_with_wait_the_cluster_is_proven_before_any_change(world, run, monkeypatch):
    """K4: a wait watches the cluster's nodes; its API is proven to be cluster_name's before the journal, the
    suspension or the scale-up, so a wrong kubeconfig changes nothing."""
    from ansible_collections.eksops.nodegroup.plugins.module_utils.nodegroup.cluster_proof import wrong_cluster_error
    from ansible_collections.eksops.nodegroup.plugins.module_utils.host.step_context import StepContext

    def wrong_cluster(self):
        raise wrong_cluster_error(CLUSTER, "https://127.0.0.1:6443", world.cluster_endpoint)

    monkeypatch.setattr(StepContext, "k8s", wrong_cluster)
    before = (sizes(world), world.tags(), suspended(world))
    result = run(wait=True)
    assert result["failed"] is True and result["code"] == "ClusterUnreachable", result
    assert (sizes(world), world.tags(), suspended(world)) == before


# --------------------------------------------------------------------------- U3 condition over snapshots

def record(instance_id, az, version, ready=True, node=True, image="ami-new", labels=None):
    """An instance record of a plain self-managed group: its node carries no node-group label (K1)."""
    return dict(instance_id=instance_id, availability_zone=az, lifecycle_state="InService",
                launch_template_version=version, image_id=image if version == 2 else "ami-old",
                node_name="n-" + instance_id if node else None, ready=ready, unschedulable=False,
                labels=dict({"topology.kubernetes.io/zone": az}, **(labels or {})))


def validation(mode="rolling", wanted=4, kind=kinds.SELF_MANAGED):
    params = dict(nodegroup_name=NODEGROUP, mode=mode)
    group = NodegroupRef(CLUSTER, NODEGROUP, kind, {"AutoScalingGroupName": ASG_NAME, "Instances": []})
    target = dict(launch_template_id="lt-1", launch_template_version=2, image_id="ami-new")
    return surge_step.NewNodeValidation(params, group, target, wanted)


def snapshot(instances, failures=()):
    return GroupSnapshot(asg={}, instances=instances, failures=list(failures), nodes=[])


def test_u3_holds_when_every_az_with_old_nodes_has_a_ready_new_node():
    instances = [record("i-1", "a", 1), record("i-2", "b", 1), record("i-3", "a", 2), record("i-4", "b", 2)]
    assert validation()(snapshot(instances)) is True


def test_u3_waits_for_missing_launches_and_unready_nodes():
    check = validation()
    assert check(snapshot([record("i-1", "a", 1), record("i-3", "a", 2)])) is False
    problems = check.problems(snapshot([record("i-1", "a", 1), record("i-2", "b", 1), record("i-3", "a", 2),
                                        record("i-4", "b", 2, ready=False)]))
    assert [p["reason"] for p in problems] == [
        "node is not Ready", "no new Ready node in this availability zone, which has old nodes"]


def test_u3_surge_steps_do_not_require_every_az():
    instances = [record("i-1", "a", 1), record("i-2", "b", 1), record("i-3", "a", 2)]
    assert validation(mode="desired", wanted=3)(snapshot(instances)) is True


def test_u3_an_eksctl_groups_new_nodes_need_its_label():
    """U3/K1: eksctl labels its nodes alpha.eksctl.io/nodegroup-name; a new node without it is not a good one."""
    eksctl = {"alpha.eksctl.io/nodegroup-name": NODEGROUP}
    old = [record("i-1", "a", 1, labels=eksctl), record("i-2", "b", 1, labels=eksctl)]
    good = old + [record("i-3", "a", 2, labels=eksctl), record("i-4", "b", 2, labels=eksctl)]
    assert validation(kind=kinds.SELF_MANAGED_EKSCTL)(snapshot(good)) is True
    unlabelled = old + [record("i-3", "a", 2, labels=eksctl), record("i-4", "b", 2)]
    check = validation(kind=kinds.SELF_MANAGED_EKSCTL)
    assert check(snapshot(unlabelled)) is False
    assert "alpha.eksctl.io/nodegroup-name=None (expected workers)" in check.problems(snapshot(unlabelled))[0]["reason"]
    # the same nodes are good nodes of a plain self-managed group, which labels none
    assert validation()(snapshot(unlabelled)) is True


def launch_error(cause, az="us-west-2b"):
    return {"code": "NodeCreationFailure", "cause": cause, "availability_zone": az}


def test_u3_a_launch_error_no_retry_fixes_ends_the_wait_at_once():
    assert validation()(snapshot([], failures=[launch_error("instance quota exceeded")])) is True


def test_u3_one_capacity_error_does_not_end_the_wait_three_in_an_az_do():
    """Issue 10 item 8: a single transient InsufficientInstanceCapacity aborted the whole upgrade."""
    capacity = launch_error("insufficient EC2 capacity")
    assert validation()(snapshot([], failures=[capacity])) is False
    assert validation()(snapshot([], failures=[capacity] * 3)) is True


def test_u3_an_az_still_without_a_new_node_once_relaunches_are_spent_ends_the_wait_with_its_failure():
    """Auto Scaling may put a relaunch in another AZ without failing again (balanced-best-effort): once every
    relaunch is spent, the AZ's capacity failure ends the wait rather than wait_timeout (U3, issue 10 item 8)."""
    capacity = launch_error("insufficient EC2 capacity", az="b")
    instances = [record("i-1", "a", 1), record("i-2", "b", 1), record("i-3", "a", 2), record("i-4", "a", 2)]
    check = validation()
    assert check.az_to_relaunch(snapshot(instances, [capacity])) == "b"
    assert check.given_up(snapshot(instances, [capacity])) is None
    check.relaunches_left = 0
    assert check.az_to_relaunch(snapshot(instances, [capacity])) is None
    assert check.given_up(snapshot(instances, [capacity])) == capacity
    assert check(snapshot(instances, [capacity])) is True
    # a failure in an AZ that has its new node since is no reason to stop
    landed = instances + [record("i-5", "b", 2)]
    assert check.given_up(snapshot(landed, [capacity])) is None


def test_the_documentation_matches_the_argument_spec():
    """The action plugin runs surge_step on the controller; plugins/modules/asg_surge.py is only its documentation."""
    from ansible_collections.eksops.nodegroup.plugins.module_utils.host.module import merged_argument_spec

    from ..module_docs import assert_docs_match_spec

    assert_docs_match_spec(asg_surge, merged_argument_spec(surge_step.ARGUMENT_SPEC, uses_aws=True, uses_k8s=True))


def test_issue29_a_launch_template_version_set_back_by_hand_stops_the_surge_before_any_change(world, run):
    """Issue 29 item 4: the new nodes of a group pointed back at version 1 would never count as new (the wait
    ended in NodeCreationFailure, blaming them): LaunchTemplateVersionChanged before any change instead."""
    assert not run(max_unavailable=1, wait=False).get("failed")
    world.autoscaling.update_auto_scaling_group(AutoScalingGroupName=ASG_NAME, LaunchTemplate=dict(
        LaunchTemplateId=world.lt_id, Version="1"))
    before = (sizes(world), world.tags())
    result = run(mode="desired", desired_capacity=13, wait=False)
    assert result["failed"] is True and result["code"] == "LaunchTemplateVersionChanged", result
    assert "version 1, no longer from %s version %s" % (world.lt_id, world.target_version) in result["msg"]
    assert (sizes(world), world.tags()) == before


def _killed_after_two_decrements(world, run, **journal_changes):
    """The scale-up done (10 = 4 + a surge of 6), then two old instances terminated with decrement, as two batches
    of the schedule once do, and the journal as the kill left it."""
    assert not run().get("failed")
    old = sorted(i["InstanceId"] for i in world.asg()["Instances"]
                 if i["LaunchTemplate"]["Version"] != str(world.target_version))[:2]
    for instance_id in old:
        world.autoscaling.terminate_instance_in_auto_scaling_group(InstanceId=instance_id,
                                                                   ShouldDecrementDesiredCapacity=True)
    journal = Journal.from_tags(world.asg()["Tags"])
    write_journal(world.autoscaling, ASG_NAME, journal.replace(**journal_changes), previous=journal)
    return journal


def test_issue25_item1_resume_in_the_upgrade_keeps_the_capacity_the_schedule_set(world, run):
    """Issue 25 item 1 (SPEC W5, B1): rerun after two decrementing batches, the scale-up keeps the desired capacity
    the schedule lowered to (8), the surge in place counting, instead of raising it back to 4 + 6 (whose two new
    nodes the scale-down would drain with moved pods)."""
    journal = _killed_after_two_decrements(world, run, desired_capacity_set=8)
    result = run()
    assert not result.get("failed"), result
    assert sizes(world)[2] == 8 and (result["surge"]["surge"], result["surge"]["after"]["desired_capacity"]) == (6, 8)
    assert Journal.from_tags(world.asg()["Tags"]) == journal.replace(desired_capacity_set=8)


def test_issue25_item1_resume_keeps_the_capacity_a_decrement_under_way_left(world, run):
    """Killed after the terminations, before the journal recorded the capacity they set: the group is at the
    capacity pending (8), which the rerun keeps and records; below the pending one it is not ours, and the capacity
    set is restored (SPEC C3)."""
    _killed_after_two_decrements(world, run, desired_capacity_pending=8)
    result = run()
    assert not result.get("failed"), result
    journal = Journal.from_tags(world.asg()["Tags"])
    assert sizes(world)[2] == 8 and (journal.desired_capacity_set, journal.desired_capacity_pending) == (8, None)

    write_journal(world.autoscaling, ASG_NAME, journal.replace(desired_capacity_set=10, desired_capacity_pending=9),
                  previous=journal)
    assert not run().get("failed")
    assert sizes(world)[2] == 10


def test_issue25_item1_resume_after_a_relaunch_in_the_scale_up_keeps_the_instance_asked_for(world, run):
    """Killed in the scale-up after a capacity error had it ask for one more instance (surge 6 + 1, journalled):
    the rerun reaches the capacity recorded instead of refusing it as above the 4 + 6 it would compute."""
    journal = Journal.start(phase="scale_up", original_min_size=0, original_max_size=12, original_desired_capacity=4,
                            desired_capacity_set=11, surge=7, suspended_processes=A1)
    write_journal(world.autoscaling, ASG_NAME, journal)
    world.autoscaling.update_auto_scaling_group(AutoScalingGroupName=ASG_NAME, DesiredCapacity=11)
    result = run()
    assert not result.get("failed"), result
    assert sizes(world) == (0, 12, 11) and result["surge"]["surge"] == 7
