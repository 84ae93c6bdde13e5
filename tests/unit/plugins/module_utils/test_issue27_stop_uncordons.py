# -*- coding: utf-8 -*-
# Copyright: Contributors to the eksops.nodegroup project
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Issue 27 (progress note, lane A): a run that stops at a safe point after the cordon of every old node (SPEC U4)
gives back the old nodes it cordoned and has not replaced yet, so that they do not stay unschedulable until the next run
(a window a week later, a cluster autoscaler growing the group for the pods they would have held); and the group one
safe point reads serves its batch's launch template check: one DescribeAutoScalingGroups per batch, not two."""

from __future__ import annotations

from types import SimpleNamespace

import pytest

from ansible_collections.eksops.nodegroup.plugins.module_utils.errors import UpgradeError
from ansible_collections.eksops.nodegroup.plugins.module_utils.gates.safe_points import SafePoints
from ansible_collections.eksops.nodegroup.plugins.module_utils.nodegroup.discovery import NodegroupRef
from ansible_collections.eksops.nodegroup.plugins.module_utils.nodegroup.journal import (
    CORDONED_BY_ANNOTATION,
    SURPLUS_ANNOTATION,
)
from ansible_collections.eksops.nodegroup.plugins.module_utils.nodegroup.pause import PAUSE_TAG
from ansible_collections.eksops.nodegroup.plugins.module_utils.phases.replace import phase as replace_steps
from ansible_collections.eksops.nodegroup.plugins.module_utils.phases.replace.batch_safe_point import (
    BatchSafePoint,
    cordons_to_release,
)
from ansible_collections.eksops.nodegroup.plugins.module_utils.phases.replace.loop import (
    Batch,
    ReplaceState,
    planned_batches,
)
from ansible_collections.eksops.nodegroup.plugins.module_utils.plan.quarantine_book import QUARANTINE_LABEL
from ansible_collections.eksops.nodegroup.plugins.module_utils.steps import asg_instance_terminate as terminate_step
from ansible_collections.eksops.nodegroup.plugins.module_utils.steps import node_drain as drain_step

from ..fakes import FakeCluster, api_error, ec2_node
from ..modules.test_node_replace import params

RUN = "run-1"


def group_node(name, instance_id, cordoned_by=None, surplus=False, quarantined=False):
    """A node of the group: cordoned by a run (its mark), surplus of this run, held in quarantine."""
    node = ec2_node(name, instance_id, unschedulable=cordoned_by is not None)
    if cordoned_by is not None:
        node["metadata"]["annotations"][CORDONED_BY_ANNOTATION] = cordoned_by
    if surplus:
        node["metadata"]["annotations"][SURPLUS_ANNOTATION] = RUN
    if quarantined:
        node["metadata"]["labels"][QUARANTINE_LABEL] = "true"
    return node


# What a stop before batch 3 finds: batch 2's node drained (its instance Terminating, the termination wait under
# way), the old nodes of batches 3 and 4 cordoned by the run, one held in quarantine, a surplus node of the
# schedule once, a node another run cordoned, a new node.
NODES = [group_node("old-3", "i-3", RUN), group_node("old-4", "i-4", RUN), group_node("drained-2", "i-2", RUN),
         group_node("held", "i-5", RUN, quarantined=True), group_node("surplus", "i-6", RUN, surplus=True),
         group_node("other-run", "i-7", "run-0"), group_node("new", "i-8")]
INSTANCES = [dict(InstanceId="i-%d" % n, LifecycleState="Terminating" if n == 2 else "InService",
                  AvailabilityZone="us-west-2a") for n in range(2, 9)]


class AutoScaling:
    """An Auto Scaling client answering DescribeAutoScalingGroups with ``asg``, counting the calls."""

    def __init__(self, asg):
        self.asg = asg
        self.described = 0

    def describe_auto_scaling_groups(self, **kwargs):
        assert kwargs == dict(AutoScalingGroupNames=[self.asg["AutoScalingGroupName"]])
        self.described += 1
        return dict(AutoScalingGroups=[self.asg])


def workers(tags=()):
    asg = dict(AutoScalingGroupName="workers-asg", Instances=INSTANCES, AvailabilityZones=["us-west-2a"],
               Tags=list(tags))
    return NodegroupRef("demo", "workers", "self_managed", asg)


class Stops:
    """SafePoints that stop with ``code`` at every safe point."""

    def __init__(self, code):
        self.code = code

    def check(self, where, expected_seconds, asg=None):
        raise UpgradeError(self.code, "Stopped %s: asked." % where, stopped_at=where)


def stop_before_batch_3(gates, group, check_mode=False, run_id=RUN):
    cluster = FakeCluster(nodes=[dict(n, metadata=dict(n["metadata"])) for n in NODES])
    autoscaling = AutoScaling(group.asg)
    warnings = []
    context = SimpleNamespace(check_mode=check_mode, warn=warnings.append, log=lambda line: None,
                              aws=lambda service: autoscaling, core_v1=lambda: cluster)
    state = ReplaceState()
    state.batches = [dict(batch=1, started=0, ended=30), dict(batch=2, started=30, ended=60)]
    safe_point = BatchSafePoint(gates, context, lambda: group, lambda batch: 600, "batch", run_id=run_id)
    try:
        safe_point.check(state, Batch(["i-3"]))
    except UpgradeError as stop:
        return stop, cluster, warnings
    return None, cluster, warnings


def unschedulable(cluster):
    return sorted(name for name, node in cluster.nodes.items() if node["spec"].get("unschedulable"))


def test_issue27_stop_uncordons_only_the_old_nodes_the_run_cordoned_and_did_not_drain():
    """The decision: the run's cordons (abort's run_cordons: not its surplus nodes), not those held in quarantine;
    the nodes of instances leaving the group are not among the nodes it is given."""
    views = [SimpleNamespace(metadata=SimpleNamespace(name=n["metadata"]["name"], labels=n["metadata"]["labels"],
                                                      annotations=n["metadata"]["annotations"])) for n in NODES]
    assert cordons_to_release(views, RUN) == ["drained-2", "old-3", "old-4"]
    assert cordons_to_release(views, "run-0") == ["other-run"]
    assert cordons_to_release(views, None) == []
    # A node this run drained stays cordoned, though a group read just after its termination was asked for may still
    # say InService.
    assert cordons_to_release(views, RUN, drained={"old-3": {}}) == ["drained-2", "old-4"]


def test_issue27_a_pause_after_the_cordon_stop_uncordons_the_old_nodes_and_says_so():
    stop, cluster, _warnings = stop_before_batch_3(SafePoints([], None, None),
                                                   workers([dict(Key=PAUSE_TAG, Value="2026-11-28T21:00:00Z alice")]))
    assert stop.code == "UpgradePaused" and stop.details["uncordoned_nodes"] == ["old-3", "old-4"]
    assert stop.msg.endswith("2 old nodes this run cordoned and has not replaced yet (old-3, old-4) are uncordoned until "
                             "the run resumes, which cordons them again before its next drain.")
    # Batch 2's node (its instance leaving), the node held in quarantine, the surplus node and another run's
    # cordon stay as they were; the old nodes lost the run's mark and the load balancer label with the cordon.
    assert unschedulable(cluster) == ["drained-2", "held", "other-run", "surplus"]
    for name in ("old-3", "old-4"):
        node = cluster.nodes[name]
        assert CORDONED_BY_ANNOTATION not in node["metadata"]["annotations"]
        assert "node.kubernetes.io/exclude-from-external-load-balancers" not in node["metadata"]["labels"]


@pytest.mark.parametrize("code", ["MaintenanceWindowClosed", "AlarmTriggered"])
def test_issue27_a_window_or_alarm_stop_uncordons_the_old_nodes_too(code):
    stop, cluster, _warnings = stop_before_batch_3(Stops(code), workers())
    assert stop.code == code and stop.details["uncordoned_nodes"] == ["old-3", "old-4"]
    assert stop.details["stopped_at"] == "before batch 3" and "(old-3, old-4) are uncordoned" in stop.msg
    assert unschedulable(cluster) == ["drained-2", "held", "other-run", "surplus"]


@pytest.mark.parametrize("code", ["InvalidParameter", "Throttling"])
def test_issue27_an_input_error_or_a_failed_read_at_a_safe_point_uncordons_nothing(code):
    """Not a stop: a window too short for any batch (InvalidParameter), CloudWatch's answer failing."""
    stop, cluster, _warnings = stop_before_batch_3(Stops(code), workers())
    assert stop.code == code and "uncordoned_nodes" not in stop.details
    assert unschedulable(cluster) == ["drained-2", "held", "old-3", "old-4", "other-run", "surplus"]


def test_issue27_a_dry_run_stop_only_warns_and_uncordons_nothing():
    stop, cluster, warnings = stop_before_batch_3(Stops("UpgradePaused"), workers(), check_mode=True)
    assert stop is None and warnings == ["a run would stop here: Stopped before batch 3: asked."]
    assert "old-3" in unschedulable(cluster)


def test_issue27_a_stop_with_nothing_of_the_run_cordoned_keeps_its_message():
    """The minimal and surge strategies cordon no node ahead of its batch: nothing to give back, nothing said."""
    stop, cluster, _warnings = stop_before_batch_3(Stops("UpgradePaused"), workers(), run_id="run-9")
    assert stop.msg == "Stopped before batch 3: asked." and stop.details["uncordoned_nodes"] == []
    assert "old-3" in unschedulable(cluster)


def test_issue27_a_stop_whose_uncordon_fails_stays_a_stop_and_says_the_nodes_may_stay_cordoned(monkeypatch):
    def refused(self, name, body, _content_type=None, _preload_content=True):
        raise api_error(403)

    monkeypatch.setattr(FakeCluster, "patch_node", refused)
    stop, cluster, _warnings = stop_before_batch_3(Stops("MaintenanceWindowClosed"), workers())
    assert stop.code == "MaintenanceWindowClosed" and stop.details["uncordoned_nodes"] == []
    assert "uncordon nodes failed: 403" in stop.details["uncordon_error"]
    assert stop.msg.startswith("Stopped before batch 3: asked. The old nodes this run cordoned may stay cordoned "
                               "until the run resumes: uncordoning old-3, old-4 failed: ")
    assert "old-3" in unschedulable(cluster)


def test_issue27_one_describe_auto_scaling_groups_per_batch_serves_its_safe_point_and_its_drain(monkeypatch):
    """The safe point before a batch reads the group (a pause request); the batch's drain step checked its launch
    template on a second read of it (issue 29 item 4). Now that read serves both: two batches, two reads (four
    before)."""
    group = workers()
    autoscaling = AutoScaling(group.asg)
    checked = []

    def drain(ctx, step, prepared=None, on_emptied=None):
        return drain_step.DrainOutcome(None, dict((i, None) for i in step.instance_ids), 0)

    def start_termination(ctx, step, hooks=None):
        return SimpleNamespace(instance_ids=list(step.instance_ids), group=group, never_joined=[],
                               availability_zones={}, group_per_az={}, replacements=[], retained_instances=[])

    monkeypatch.setattr(drain_step, "drain", drain)
    monkeypatch.setattr(terminate_step, "start_termination", start_termination)
    monkeypatch.setattr(terminate_step, "finish_termination", lambda ctx, termination: termination)
    monkeypatch.setattr(replace_steps, "check_launch_template_unmoved",
                        lambda ec2, asg, journal: checked.append(asg))
    clients = SimpleNamespace(lease_heartbeats={}, aws=lambda service: autoscaling)
    loop, next_batch, _safe_point, _judge = replace_steps.replace_loop(
        params(), replace_steps.step_options(params(), False), clients, check_mode=False, diff=False,
        warn=[].append, log=lambda line: None, progress=[].append, next_batch=planned_batches([["i-3"], ["i-4"]]),
        node_names={}, safe_points=SafePoints([], None, None), group=group)
    state = loop.run(next_batch)
    assert state.replaced_instances == ["i-3", "i-4"]
    assert autoscaling.described == 2 and checked == [group.asg, group.asg]
