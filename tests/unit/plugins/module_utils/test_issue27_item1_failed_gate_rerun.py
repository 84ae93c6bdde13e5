# -*- coding: utf-8 -*-
# Copyright: Contributors to the eksops.nodegroup project
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Issue 27 item 1, what its first build left open: a failed health gate is remembered in the journal and a rerun
judges its workloads again before its first batch (before, the rerun drained its next batch without looking at
them)."""

from __future__ import annotations

import pytest
from moto import mock_aws

from ansible_collections.eksops.nodegroup.plugins.module_utils.errors import HEALTH_GATE_FAILED, UpgradeError
from ansible_collections.eksops.nodegroup.plugins.module_utils.nodegroup import journal as jr
from ansible_collections.eksops.nodegroup.plugins.module_utils.nodegroup.discovery import NodegroupRef, describe_asg
from ansible_collections.eksops.nodegroup.plugins.module_utils.phases.replace import health_gate as gates
from ansible_collections.eksops.nodegroup.plugins.module_utils.phases.replace.loop import (
    ReplaceFailed,
    ReplaceLoop,
    ReplaceState,
    planned_batches,
)
from ansible_collections.eksops.nodegroup.plugins.module_utils.steps.nodegroup_abort import rollback_journal
from ansible_collections.eksops.nodegroup.plugins.module_utils.plan.workload_health import (
    record_failed_gate,
    recorded_gate,
)

from ..fakes import FakeClock
from ..moto_nodegroup import ASG_NAME, CLUSTER, NODEGROUP, MotoNodegroup
from .test_issue27_item1_health_gate import GatedSteps, Lists, deployment

WEB = "Deployment default/web"
HEALTH_GATE_TAG = "eksops.nodegroup/health_gate"


class Cluster(Lists):
    """The gate's list calls: Deployment default/web at ``available`` of its 3 replicas, no pod Pending."""

    def __init__(self, available):
        super().__init__([[]], deployments=[[deployment(available=available)]])


class Steps(GatedSteps):
    """Fake drain, termination and wait whose batch i-N moves Deployment default/web."""

    def drain(self, batch):
        drained = super().drain(batch)
        for node in drained.nodes.values():
            node["workloads"] = [WEB]
        return drained


def run(world, cluster, batches, judged_first=False):
    """A node_replace loop over ``batches`` with the real HealthGate on ``cluster`` and its record in ``world``'s
    journal: (what the steps did, the progress lines, the ReplaceFailed or None)."""
    steps, lines = Steps(), []
    record = gates.GateRecord(lambda: world.autoscaling, lambda: NodegroupRef(
        CLUSTER, NODEGROUP, "self_managed", describe_asg(world.autoscaling, ASG_NAME)))
    gate = gates.HealthGate(cluster, cluster, batch_soak=30, timeout=60, clock=FakeClock(), record=record)
    clock = iter(range(1000, 2000))
    loop = ReplaceLoop(steps.drain, steps.start, steps.finish, lines.append, overlap=True, total=len(batches),
                       clock=lambda: next(clock), gate=gate)
    source = planned_batches(batches)
    try:
        loop.run(gates.judged_again_first(record, lambda: gate, source, lines.append) if judged_first else source)
    except ReplaceFailed as failed:
        return steps.events, lines, failed
    return steps.events, lines, None


@mock_aws
def test_issue27_item1_a_failed_health_gate_is_remembered_and_a_rerun_judges_it_before_draining():
    world = MotoNodegroup()
    jr.write_journal(world.autoscaling, ASG_NAME, jr.Journal.start("upgrade"))
    # The first run: batch 1 moves web, which does not come back; batch 2 is not drained.
    events, _lines, failed = run(world, Cluster(available=1), [["i-1"], ["i-2"]])
    assert failed.error.code == HEALTH_GATE_FAILED and ("drain", "i-2") not in events
    assert world.tags()[HEALTH_GATE_TAG] == WEB
    # The rerun, web still down: the gate is judged again first and fails, naming it; nothing is drained.
    down = Cluster(available=1)
    events, lines, failed = run(world, down, [["i-2"]], judged_first=True)
    assert failed.error.code == HEALTH_GATE_FAILED and failed.error.details["workloads"] == [WEB]
    assert "the health gate an earlier run failed, judged again" in failed.error.msg
    assert not any(event[0] == "drain" for event in events) and down.calls
    assert world.tags()[HEALTH_GATE_TAG] == WEB
    assert any("an earlier run's health gate failed on 1 workload(s): judged again" in line for line in lines)
    # web is back: the rerun judges it healthy, forgets the failure and drains batch 2.
    events, lines, failed = run(world, Cluster(available=3), [["i-2"]], judged_first=True)
    assert failed is None and events[0] == ("drain", "i-2")
    assert HEALTH_GATE_TAG not in world.tags() and jr.read_journal(world.autoscaling, ASG_NAME).phase == "upgrade"
    assert any("the health gate an earlier run failed passed after" in line for line in lines)


@mock_aws
def test_issue27_item1_a_rerun_without_a_failed_gate_reads_nothing_more_and_a_passed_gate_records_nothing():
    world = MotoNodegroup()
    jr.write_journal(world.autoscaling, ASG_NAME, jr.Journal.start("upgrade"))
    cluster = Cluster(available=3)
    events, lines, failed = run(world, cluster, [["i-1"]], judged_first=True)
    assert failed is None and events[0] == ("drain", "i-1")
    assert cluster.calls == [("pods", "default"), ("deployments", "default")]  # batch 1's own gate only
    assert HEALTH_GATE_TAG not in world.tags() and not any("earlier run" in line for line in lines)


def test_issue27_item1_the_record_of_a_failed_gate_fits_a_tag_and_says_how_many_it_left_out():
    refs = ["Deployment team-%02d/checkout-frontend" % n for n in range(12)]
    value = record_failed_gate(refs, jr.MAX_TAG_VALUE_LENGTH)
    kept, left_out = recorded_gate(value)
    assert len(value) <= jr.MAX_TAG_VALUE_LENGTH and kept == refs[:len(kept)] and left_out == len(refs) - len(kept) > 0
    assert recorded_gate(record_failed_gate([WEB, WEB], 256)) == ([WEB], 0)
    assert recorded_gate(None) == ([], 0)


@mock_aws
@pytest.mark.parametrize("check_mode, gated", [(False, False), (False, True), (True, True)])
def test_issue27_item1_a_rerun_judges_a_recorded_gate_even_when_it_gates_no_batch_and_a_dry_run_never(
        monkeypatch, check_mode, gated):
    world = MotoNodegroup()
    jr.write_journal(world.autoscaling, ASG_NAME, jr.Journal.start("upgrade", health_gate_failed=WEB))
    cluster = Cluster(available=1)
    monkeypatch.setattr(gates, "apps_v1", lambda api_client: cluster)
    monkeypatch.setattr(gates.clocks, "SYSTEM_CLOCK", FakeClock())
    clients = type("Clients", (), dict(core_v1=lambda self: cluster, k8s=lambda self: None))()
    params = dict(batch_soak_seconds=30 if gated else 0, health_gate_timeout=60, canary_soak_seconds=0)
    gate, judged_first = gates.phase_gates(
        params, clients, {}, check_mode, lambda: world.autoscaling,
        lambda: NodegroupRef(CLUSTER, NODEGROUP, "self_managed", describe_asg(world.autoscaling, ASG_NAME)),
        lambda line: None)
    assert (gate is not None) == (gated and not check_mode)
    source = planned_batches([["i-1"]])
    if check_mode:
        assert judged_first(source) is source
        return
    with pytest.raises(UpgradeError) as failed:
        judged_first(source)(ReplaceState())
    assert failed.value.code == HEALTH_GATE_FAILED and cluster.calls[:2] == [("pods", "default"), ("deployments", "default")]


# -- what a review of the first build found (issue 27 item 1) ----------------------------------------------------

@mock_aws
def test_issue27_item1_spec_o4_a_rollback_or_a_retarget_forgets_the_failed_gate_of_the_target_it_leaves():
    """Issue 27 items 1 and 3 (SPEC O1, O4): abort_upgrade.yml rollback=true runs the upgrade to the version before;
    the journal kept the failed gate of the bad target, so that run judged the bad AMI's workloads first and
    stopped with HealthGateFailed, every time. A rollback (nodegroup_abort) and a retarget (force_new_target) aim
    at another target: the record goes, and the run is not stopped by it."""
    upgrade = jr.Journal.start("upgrade", launch_template_id="lt-1", previous_launch_template_version="1",
                               target_launch_template_version="2", desired_capacity_set=4, health_gate_failed=WEB)
    assert upgrade.retargeted("lt-1", "3", "ami-3", "2").health_gate_failed is None
    rollback = rollback_journal(upgrade, dict(AutoScalingGroupName=ASG_NAME, Instances=[]))
    assert rollback.rollback_of == "2" and rollback.health_gate_failed is None
    world = MotoNodegroup()
    # As abort_upgrade.yml leaves it: the rollback recorded, then retargeted at the version before.
    jr.write_journal(world.autoscaling, ASG_NAME, rollback.retargeted("lt-1", "1", "ami-1", "2"))
    assert HEALTH_GATE_TAG not in world.tags()
    # The rollback's run judges nothing first: batch i-2 is drained.
    events, _lines, failed = run(world, Cluster(available=3), [["i-2"]], judged_first=True)
    assert failed is None and events[0] == ("drain", "i-2")
