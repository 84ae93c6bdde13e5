# -*- coding: utf-8 -*-
# Copyright: Contributors to the eksops.nodegroup project
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""nodegroup_scale_restore run in-process against moto, with the Kubernetes side faked (SPEC U6, C2, C3, A1)."""

from __future__ import annotations

from collections import Counter
from unittest import mock

import pytest
from moto import mock_aws

from ansible_collections.eksops.nodegroup.plugins.module_utils.members.group_nodes import (
    node_view,
    SCALE_DOWN_DISABLED_ANNOTATION,
    SCALE_DOWN_DISABLED_BY_ANNOTATION,
)
from ansible_collections.eksops.nodegroup.plugins.module_utils.drain import DrainResult
from ansible_collections.eksops.nodegroup.plugins.module_utils.nodegroup.journal import Journal, write_journal
from ansible_collections.eksops.nodegroup.plugins.module_utils.host.step_context import StepContext
from ansible_collections.eksops.nodegroup.plugins.module_utils.steps import nodegroup_scale_restore as restore_step
from ansible_collections.eksops.nodegroup.plugins.module_utils.steps import asg_surge as surge_step
from ansible_collections.eksops.nodegroup.plugins.modules import asg_surge, nodegroup_scale_restore

from ..moto_nodegroup import ASG_NAME, CLUSTER, NODEGROUP, mutating, run_step_in_process
from .asg_world import sizes, suspended, upgraded_world

BASE = dict(cluster_name=CLUSTER, nodegroup_name=NODEGROUP, kubeconfig="/unused", post_drain_wait=0,
            wait_timeout=30)
A1 = ["AZRebalance", "AlarmNotification", "ScheduledActions", "ReplaceUnhealthy", "InstanceRefresh"]


class FakeCluster:
    """Nodes for the ASG's live instances; records drains and annotation removals."""

    def __init__(self, world, failing=(), joined_late=(), still_running=(), not_joined=()):
        self.world = world
        self.failing = set(failing)
        self.joined_late = set(joined_late)        # instances whose node was not there when the plan was made
        self.not_joined = set(not_joined)          # instances with no node yet when the restore looks for them
        self.still_running = set(still_running)    # instances whose node still runs a pod at the terminate
        self.drained = []
        self.unmarked = []
        self.selectors = []                        # the node selector of each node lookup (K1, P2)

    def resolve(self, _core_v1, instance_ids, node_selector):
        self.selectors.append(node_selector)
        return dict((instance_id, None if instance_id in self.not_joined else "n-" + instance_id)
                    for instance_id in instance_ids), 1

    def undrained(self, _core_v1, instance_ids, node_selector):
        self.selectors.append(node_selector)
        return [dict(instance_id=i, node="n-" + i, cordoned=True, pods=["default/late-0"])
                for i in instance_ids if i in self.still_running], 1

    def nodes(self, _core_v1, group):
        """list_nodegroup_nodes: the nodes of the instances of the group as the module last described it (a
        plain self-managed group's nodes carry no node-group label, SPEC K1)."""
        self.selectors.append(group.node_selector)
        views = []
        for instance in group.asg["Instances"]:
            if instance["InstanceId"] in self.joined_late:
                continue
            views.append(node_view({
                "metadata": {"name": "n-" + instance["InstanceId"], "labels": {},
                             "annotations": {SCALE_DOWN_DISABLED_ANNOTATION: "true",
                                             SCALE_DOWN_DISABLED_BY_ANNOTATION: "run"}},
                "spec": {"providerID": "aws:///%s/%s" % (instance["AvailabilityZone"], instance["InstanceId"])},
                "status": {"conditions": [{"type": "Ready", "status": "True"}]}}))
        return views

    def drain(self, _core_v1, names, options, load_balancers=None):
        self.drained.append((list(names), options.as_dict(), load_balancers))
        self.members_at_drain = set(i["InstanceId"] for i in self.world.asg()["Instances"])
        result = DrainResult(names)
        for name in names:
            if name in self.failing:
                result.nodes[name].error = "%s: pod default/web-1 blocked by PodDisruptionBudget web" % name
        return result

    def unmark(self, _core_v1, nodes):
        self.unmarked.extend(n.metadata.name for n in nodes)
        return [n.metadata.name for n in nodes]


@pytest.fixture
def world():
    with mock_aws():
        yield upgraded_world(desired=4)


@pytest.fixture
def run():
    def run_it(cluster, check=False, diff=False, **args):
        with mock.patch.object(StepContext, "core_v1", lambda self: None), \
                mock.patch.object(restore_step, "list_nodegroup_nodes", cluster.nodes), \
                mock.patch.object(restore_step, "drain_nodes", cluster.drain), \
                mock.patch.object(restore_step, "resolve_instance_nodes", cluster.resolve), \
                mock.patch.object(restore_step, "undrained_instances", cluster.undrained), \
                mock.patch.object(restore_step, "unmark_scale_down_disabled", cluster.unmark):
            return run_step_in_process(restore_step, nodegroup_scale_restore, dict(BASE, **args), check=check,
                                       diff=diff)
    return run_it


@pytest.fixture
def surged(world):
    world.autoscaling.suspend_processes(AutoScalingGroupName=ASG_NAME, ScalingProcesses=["AZRebalance"])
    result = run_step_in_process(surge_step, asg_surge, dict(cluster_name=CLUSTER, nodegroup_name=NODEGROUP,
                                                             kubeconfig="/unused", wait=False))
    assert not result.get("failed"), result
    assert sizes(world) == (0, 12, 10)
    return world


def test_without_a_journal_nothing_changes(world, run):
    cluster = FakeCluster(world)
    result = run(cluster)
    assert not result.get("failed"), result
    assert result["changed"] is False and result["restore"]["journal_found"] is False
    assert cluster.drained == [] and sizes(world) == (0, 12, 4)


def test_u6_check_mode_plans_and_changes_nothing(surged, run):
    cluster = FakeCluster(surged)
    tags = surged.tags()
    result = run(cluster, check=True, diff=True)
    assert not result.get("failed"), result
    assert result["changed"] is True
    plan = result["restore"]
    assert plan["after"] == dict(min_size=0, max_size=12, desired_capacity=4)
    assert len(plan["removed_instances"]) == 6
    assert sorted(plan["resumed_processes"]) == sorted(p for p in A1 if p != "AZRebalance")
    assert result["diff"]["after"]["suspended_processes"] == ["AZRebalance"]
    assert "diff" not in run(cluster, check=True)  # only in diff mode
    assert cluster.drained == [] and cluster.unmarked == []
    assert sizes(surged) == (0, 12, 10) and surged.tags() == tags


def test_u6_restores_exactly_resumes_only_ours_and_clears_the_journal_last(surged, run):
    cluster = FakeCluster(surged)
    result = run(cluster)
    assert not result.get("failed"), result
    out = result["restore"]
    removed = out["removed_instances"]
    assert len(removed) == 6
    # drained like any other node, before termination, with our drain options
    [(names, options, balancers)] = cluster.drained
    assert sorted(names) == sorted(r["node_name"] for r in removed)
    assert options["post_drain_wait"] == 0 and options["force"] is False
    # B3: the cluster's load balancers were looked for (moto has none), so the fixed wait applies
    assert balancers is not None and not balancers.found
    assert sizes(surged) == (0, 12, 4)
    assert suspended(surged) == ["AZRebalance"]  # A1: suspended before the upgrade, so left suspended
    assert not any(k.startswith("eksops.nodegroup/") for k in surged.tags())
    assert len(cluster.unmarked) == 4  # C2 annotation removed from the nodes that stay
    assert set(cluster.selectors) == {None}
    left = Counter(i["AvailabilityZone"] for i in surged.asg()["Instances"])
    removed_azs = Counter(r["availability_zone"] for r in removed)
    assert sum(left.values()) == 4
    for az in removed_azs:
        assert left[az] >= max(left.values()) - 1  # AZ-balanced scale-in

    again = run(FakeCluster(surged))
    assert not again.get("failed") and again["changed"] is False


def test_the_scale_in_protection_the_upgrade_set_is_removed_and_no_other(world, run):
    """Issue 10 item 22: the scale-up protected the group's instances ("ours"); the restore removes it. A group
    that used scale-in protection before ("theirs") keeps its own."""
    run_step_in_process(surge_step, asg_surge, dict(cluster_name=CLUSTER, nodegroup_name=NODEGROUP,
                                                    kubeconfig="/unused", wait=False))
    protected = set(i["InstanceId"] for i in world.asg()["Instances"] if i["ProtectedFromScaleIn"])
    assert len(protected) == 4
    result = run(FakeCluster(world))
    assert not result.get("failed"), result
    remaining = world.asg()["Instances"]
    # Exactly the protected instances that stay are unprotected (which instances are surplus may vary: when all
    # four go, nothing is left to unprotect, which a clean-clone run once hit).
    stayed = protected & set(i["InstanceId"] for i in remaining)
    assert set(result["restore"].get("unprotected_instances", [])) == stayed
    assert not any(i["ProtectedFromScaleIn"] for i in remaining)


def test_a_group_protecting_its_own_instances_is_left_alone(world, run):
    first = world.asg()["Instances"][0]["InstanceId"]
    world.autoscaling.set_instance_protection(AutoScalingGroupName=ASG_NAME, InstanceIds=[first],
                                              ProtectedFromScaleIn=True)
    run_step_in_process(surge_step, asg_surge, dict(cluster_name=CLUSTER, nodegroup_name=NODEGROUP,
                                                    kubeconfig="/unused", wait=False))
    assert Journal.from_tags(world.asg()["Tags"]).scale_in_protection == "theirs"
    result = run(FakeCluster(world))
    assert not result.get("failed"), result
    assert "unprotected_instances" not in result["restore"]
    assert all(i["ProtectedFromScaleIn"] == (i["InstanceId"] == first) for i in world.asg()["Instances"])


def test_accept_current_capacity_finishes_the_restore_keeping_the_autoscalers_nodes(surged, run):
    """Issue 10 item 23: after ClusterAutoscalerActive, a rerun with accept_current_capacity restores MinSize,
    MaxSize and processes, keeps the autoscaler's extra node on top of the original 4, and clears the journal."""
    surged.autoscaling.set_desired_capacity(AutoScalingGroupName=ASG_NAME, DesiredCapacity=11)
    result = run(FakeCluster(surged), accept_current_capacity=True)
    assert not result.get("failed"), result
    assert result["restore"]["after"] == dict(min_size=0, max_size=12, desired_capacity=5)
    assert sizes(surged) == (0, 12, 5) and len(result["restore"]["removed_instances"]) == 6
    assert not any(k.startswith("eksops.nodegroup/") for k in surged.tags())


@pytest.mark.parametrize("on_autoscaler", ["fail", "stop"])
def test_c3_autoscaler_change_stops_without_restoring(surged, run, on_autoscaler):
    surged.autoscaling.set_desired_capacity(AutoScalingGroupName=ASG_NAME, DesiredCapacity=11)
    cluster = FakeCluster(surged)
    tags = surged.tags()
    result = run(cluster, on_autoscaler=on_autoscaler)
    if on_autoscaler == "fail":
        assert result["failed"] is True and result["code"] == "ClusterAutoscalerActive"
    else:
        assert not result.get("failed") and result["changed"] is False and result["restore"]["autoscaler_detected"] is True
    assert "11" in result["msg"] and "10" in result["msg"]
    assert isinstance(result["restore"]["scaling_activities"], list)
    assert cluster.drained == [] and sizes(surged) == (0, 12, 11) and surged.tags() == tags


class AutoscalerDuringDrain(FakeCluster):
    """The cluster autoscaler scales the group up while the surplus nodes drain (their pods go Pending)."""

    def drain(self, core_v1, names, options, load_balancers=None):
        self.world.autoscaling.set_desired_capacity(AutoScalingGroupName=ASG_NAME, DesiredCapacity=11)
        return super().drain(core_v1, names, options, load_balancers)


@pytest.mark.parametrize("on_autoscaler", ["fail", "stop"])
def test_c3_autoscaler_change_during_the_drain_stops_before_any_removal(surged, run, on_autoscaler):
    """U6/C3: the desired capacity is read again after the drain; nothing is terminated or restored."""
    cluster = AutoscalerDuringDrain(surged)
    instances_before = sorted(i["InstanceId"] for i in surged.asg()["Instances"])
    result = run(cluster, on_autoscaler=on_autoscaler)
    if on_autoscaler == "fail":
        assert result["failed"] is True and result["code"] == "ClusterAutoscalerActive"
    else:
        assert not result.get("failed") and result["restore"]["autoscaler_detected"] is True
    assert result["changed"] is True  # the surplus nodes were drained
    assert len(cluster.drained) == 1
    assert sizes(surged) == (0, 12, 11)
    # none removed (in-process moto has already launched the autoscaler's extra instance)
    assert set(instances_before) <= set(i["InstanceId"] for i in surged.asg()["Instances"])
    assert any(tag.startswith("eksops.nodegroup/") for tag in surged.tags())


def test_drain_failure_keeps_the_journal_and_sizes(surged, run):
    first = FakeCluster(surged)
    plan = run(first, check=True)["restore"]["removed_instances"]
    cluster = FakeCluster(surged, failing=[plan[0]["node_name"]])
    result = run(cluster)
    assert result["failed"] is True and result["code"] == "PodEvictionFailure"
    assert "PodDisruptionBudget web" in result["msg"]
    assert sizes(surged) == (0, 12, 10)
    assert Journal.from_tags(surged.asg()["Tags"]).phase == "scale_down"


def test_u6_a_surplus_node_that_joined_after_the_plan_is_drained_too(surged, run):
    plan = run(FakeCluster(surged), check=True)["restore"]["removed_instances"]
    late = plan[0]["instance_id"]
    cluster = FakeCluster(surged, joined_late=[late])
    result = run(cluster)
    assert not result.get("failed"), result
    [(names, _options, _balancers)] = cluster.drained
    assert "n-" + late in names and len(names) == 6


def test_u6_a_surplus_instance_without_a_node_goes_before_any_drain(surged, run):
    """The last replacement of the upgrade phase may still be booting when the restore starts: it holds no pod, so
    it is terminated at once; drained after the others, its node could have joined and taken their pods (a
    benchmark run failed so: PodEvictionFailure, 'node ... is not cordoned and still runs 23 pod(s)')."""
    plan = run(FakeCluster(surged), check=True)["restore"]["removed_instances"]
    booting = plan[0]["instance_id"]
    cluster = FakeCluster(surged, not_joined=[booting])
    result = run(cluster)
    assert not result.get("failed"), result
    [(names, _options, _balancers)] = cluster.drained
    assert "n-" + booting not in names and len(names) == 5
    assert booting not in cluster.members_at_drain
    assert sizes(surged) == (0, 12, 4) and booting not in set(i["InstanceId"] for i in surged.asg()["Instances"])
    assert not any(k.startswith("eksops.nodegroup/") for k in surged.tags())


def test_u6_a_surplus_node_still_running_pods_is_not_terminated(surged, run):
    plan = run(FakeCluster(surged), check=True)["restore"]["removed_instances"]
    cluster = FakeCluster(surged, still_running=[plan[0]["instance_id"]])
    result = run(cluster)
    assert result["failed"] is True and result["code"] == "PodEvictionFailure"
    assert plan[0]["instance_id"] in result["msg"] and "default/late-0" in result["msg"]
    assert sizes(surged) == (0, 12, 10) and len(surged.asg()["Instances"]) == 10
    assert Journal.from_tags(surged.asg()["Tags"]).phase == "scale_down"


def test_resumes_when_a_crash_left_the_group_below_the_journal(surged, run):
    journal = Journal.from_tags(surged.asg()["Tags"])
    write_journal(surged.autoscaling, ASG_NAME, journal.replace(phase="scale_down"))
    victim = surged.asg()["Instances"][0]["InstanceId"]
    surged.autoscaling.terminate_instance_in_auto_scaling_group(InstanceId=victim, ShouldDecrementDesiredCapacity=True)
    result = run(FakeCluster(surged))
    assert not result.get("failed"), result
    assert len(result["restore"]["removed_instances"]) == 5
    assert sizes(surged) == (0, 12, 4)


def test_k3_a_managed_node_group_is_refused_before_any_change():
    """K3: a managed group with a journal on its ASG (left by an older version of this collection) is not
    restored through the ASG EKS owns: refused, naming nodegroup_name, before any change or drain."""
    with mock_aws():
        world = upgraded_world(kind="managed")
        write_journal(world.autoscaling, world.asg_name, Journal.start(
            phase="upgrade", original_min_size=0, original_max_size=12, original_desired_capacity=2,
            desired_capacity_set=4, suspended_processes=A1))
        before = (sizes(world), world.tags(), suspended(world))
        cluster = FakeCluster(world)
        calls = []
        with mock.patch.object(StepContext, "core_v1", lambda self: None), \
                mock.patch.object(restore_step, "list_nodegroup_nodes", cluster.nodes), \
                mock.patch.object(restore_step, "drain_nodes", cluster.drain):
            result = run_step_in_process(restore_step, nodegroup_scale_restore, BASE, aws_calls=calls)
        assert (sizes(world), world.tags(), suspended(world)) == before
    assert result["failed"] is True and (result["code"], result["parameter"]) == ("InvalidParameter", "nodegroup_name")
    assert NODEGROUP in result["msg"] and world.asg_name in result["msg"]
    assert mutating(calls) == [] and cluster.drained == [] and cluster.selectors == []


def hand_journal(**fields):
    return Journal(**dict(dict(original_min_size=3, original_max_size=10, original_desired_capacity=5,
                               sizes_set={"max_size": 16}), **fields))


@pytest.mark.parametrize("found,kept", [
    # (min, max, desired) now -> the sizes kept (the rest restored)
    ((3, 16, 11), []),                  # what the upgrade set: restored
    ((3, 10, 11), []),                  # set back to the original (an apply): restored, nothing to say
    ((3, 20, 11), ["max_size"]),        # raised by hand: kept
    ((3, 12, 11), ["max_size"]),        # lowered by hand, not to the original: kept
    ((1, 16, 11), ["min_size"]),        # MinSize, which the upgrade never set: kept
])
def test_issue29_a_maxsize_changed_by_hand_is_kept_the_decision(found, kept):
    """Issue 29 item 4: a size that is neither the journal's original nor what the upgrade set was changed by
    someone else during the upgrade: the restore keeps it, and puts back the rest."""
    before = dict(zip(("min_size", "max_size", "desired_capacity"), found))
    changes = restore_step.sizes_changed_by_hand(hand_journal(), before)
    assert [change["size"] for change in changes] == kept
    after = restore_step.restored_sizes(hand_journal(), before, changes)
    expected = dict(min_size=3, max_size=10, desired_capacity=5)
    expected.update((size, before[size]) for size in kept)
    assert after == expected


def test_issue29_the_desired_capacity_is_put_back_within_the_sizes_kept():
    """A MinSize raised by hand above the original desired capacity (or a MaxSize lowered below it) bounds the
    desired capacity the restore puts back: AWS refuses a desired capacity outside MinSize..MaxSize."""
    raised = dict(min_size=7, max_size=16, desired_capacity=11)
    journal = hand_journal()
    assert restore_step.restored_sizes(journal, raised, restore_step.sizes_changed_by_hand(journal, raised)) == \
        dict(min_size=7, max_size=10, desired_capacity=7)
    lowered = dict(min_size=3, max_size=4, desired_capacity=4)
    assert restore_step.restored_sizes(journal, lowered, restore_step.sizes_changed_by_hand(journal, lowered)) == \
        dict(min_size=3, max_size=4, desired_capacity=4)


def test_issue29_without_an_original_a_size_is_left_as_it_is_and_not_reported():
    journal = Journal(original_desired_capacity=5)
    before = dict(min_size=1, max_size=30, desired_capacity=11)
    assert restore_step.sizes_changed_by_hand(journal, before) == []
    assert restore_step.restored_sizes(journal, before) == dict(min_size=1, max_size=30, desired_capacity=5)


def test_issue29_a_maxsize_changed_by_hand_is_kept_warned_and_reported(surged, run):
    """Issue 29 item 4 end to end in moto: MaxSize raised from 12 to 20 during the upgrade stays 20, with a warning
    naming both values, in the result and in the diff; the rest is restored."""
    surged.autoscaling.update_auto_scaling_group(AutoScalingGroupName=ASG_NAME, MaxSize=20)
    result = run(FakeCluster(surged), diff=True)
    assert not result.get("failed"), result
    assert sizes(surged) == (0, 20, 4)
    assert result["restore"]["kept_sizes"] == [dict(size="max_size", aws_name="MaxSize", before_upgrade=12,
                                                    set_by_upgrade=12, found=20)]
    assert result["diff"]["after"]["kept_sizes"] == ["max_size"]
    [warning] = [w for w in result.get("warnings", []) if "MaxSize" in w]
    assert "is 20" in warning and "putting back 12" in warning and ASG_NAME in warning


@pytest.mark.parametrize("phase,desired,active", [
    ("upgrade", 10, False), ("upgrade", 11, True), ("upgrade", 9, True),
    ("scale_down", 9, False), ("scale_down", 11, True),
])
def test_c3_autoscaler_rule(phase, desired, active):
    journal = Journal(phase=phase, desired_capacity_set=10)
    assert restore_step.autoscaler_active(journal, desired) is active


@pytest.mark.parametrize("desired,active", [(10, False), (8, False), (9, False), (11, True), (7, True)])
def test_c3_pending_decrement_is_ours_any_other_value_is_the_autoscaler(desired, active):
    """C3: a surge step recorded that its terminations leave 8; the group at 10, 8 or in between (killed after
    one of its two terminations, issue 25 item 1) is ours, anything else not."""
    journal = Journal(phase="upgrade", desired_capacity_set=10, desired_capacity_pending=8)
    assert restore_step.autoscaler_active(journal, desired) is active


def test_c3_crash_between_a_surge_step_terminate_and_its_journal_write_restores(surged, run):
    """C3 with a surge: the last step recorded its pending decrement, terminated with decrement and died before
    the journal update. The restore takes the lower capacity for ours and finishes."""
    journal = Journal.from_tags(surged.asg()["Tags"])
    write_journal(surged.autoscaling, ASG_NAME, journal.replace(desired_capacity_pending=9))
    victim = surged.asg()["Instances"][0]["InstanceId"]
    surged.autoscaling.terminate_instance_in_auto_scaling_group(InstanceId=victim, ShouldDecrementDesiredCapacity=True)
    result = run(FakeCluster(surged))
    assert not result.get("failed"), result
    assert result["restore"]["autoscaler_detected"] is False
    assert sizes(surged) == (0, 12, 4)
    assert not any(k.startswith("eksops.nodegroup/") for k in surged.tags())


def test_the_documentation_matches_the_argument_spec():
    """The action plugin runs restore_step on the controller; plugins/modules/nodegroup_scale_restore.py is only
    its documentation."""
    from ansible_collections.eksops.nodegroup.plugins.module_utils.host.module import merged_argument_spec

    from ..module_docs import assert_docs_match_spec

    assert_docs_match_spec(nodegroup_scale_restore,
                           merged_argument_spec(restore_step.ARGUMENT_SPEC, uses_aws=True, uses_k8s=True))


def test_issue29_w2_a_refresh_started_during_the_upgrade_stops_the_scale_down_before_the_processes_resume(
        surged, run, monkeypatch):
    """W2: an owner's apply during the upgrade started an instance refresh, paused by the suspended InstanceRefresh
    process; resuming it would replace the upgraded nodes undrained. The scale-down stops before resuming, keeping the
    journal, and says how to finish."""
    from .. import moto_nodegroup

    monkeypatch.setattr(moto_nodegroup, "INSTANCE_REFRESHES", [
        dict(InstanceRefreshId="r-9", AutoScalingGroupName=ASG_NAME, Status="InProgress", PercentageComplete=0)])
    result = run(FakeCluster(surged))
    assert result["failed"] and result["code"] == "InstanceRefreshInProgress", result
    assert result["changed"] is True and len(result["restore"]["removed_instances"]) == 6
    assert "cancel-instance-refresh" in result["msg"] and "run again" in result["msg"]
    assert "InstanceRefresh" in suspended(surged) and any(k.startswith("eksops.nodegroup/") for k in surged.tags())
