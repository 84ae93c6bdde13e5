# -*- coding: utf-8 -*-
# Copyright: Contributors to the eksops.nodegroup project
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Issue 27 item 1, what its first build left open: a failed health gate is remembered in the journal and a rerun
judges its workloads again before its first batch (before, the rerun drained its next batch without looking at
them)."""

from __future__ import annotations

import pytest
from moto import mock_aws

from ansible_collections.eksops.nodegroup.plugins.module_utils.errors import API_ERROR, HEALTH_GATE_FAILED, UpgradeError
from ansible_collections.eksops.nodegroup.plugins.module_utils.nodegroup import journal as jr
from ansible_collections.eksops.nodegroup.plugins.module_utils.nodegroup.discovery import NodegroupRef, describe_asg
from ansible_collections.eksops.nodegroup.plugins.module_utils.phases.replace import health_gate as gates
from ansible_collections.eksops.nodegroup.plugins.module_utils.phases.replace.loop import (
    ReplaceFailed,
    ReplaceLoop,
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


def record_of(world):
    return gates.GateRecord(lambda: world.autoscaling, lambda: NodegroupRef(
        CLUSTER, NODEGROUP, "self_managed", describe_asg(world.autoscaling, ASG_NAME)))


def run(world, cluster, batches, judged_first=False, warnings=None):
    """A node_replace loop over ``batches`` with the real HealthGate on ``cluster`` and its record in ``world``'s
    journal, after (``judged_first``) what an earlier run's failed gate recorded was judged again, as node_replace
    does first: (what the steps did, the progress lines, the UpgradeError that stopped it or None)."""
    steps, lines = Steps(), []
    record = record_of(world)
    gate = gates.HealthGate(cluster, cluster, batch_soak=30, timeout=60, clock=FakeClock(), record=record)
    clock = iter(range(1000, 2000))
    loop = ReplaceLoop(steps.drain, steps.start, steps.finish, lines.append, overlap=True, total=len(batches),
                       clock=lambda: next(clock), gate=gate)
    try:
        if judged_first:
            gates.judged_again_first(record, lambda: gate, lines.append,
                                     (warnings if warnings is not None else []).append)
        loop.run(planned_batches(batches))
    except ReplaceFailed as failed:
        return steps.events, lines, failed.error
    except UpgradeError as error:
        return steps.events, lines, error
    return steps.events, lines, None


@mock_aws
def test_issue27_item1_a_failed_health_gate_is_remembered_and_a_rerun_judges_it_before_draining():
    world = MotoNodegroup()
    jr.write_journal(world.autoscaling, ASG_NAME, jr.Journal.start("upgrade"))
    # The first run: batch 1 moves web, which does not come back; batch 2 is not drained.
    events, _lines, failed = run(world, Cluster(available=1), [["i-1"], ["i-2"]])
    assert failed.code == HEALTH_GATE_FAILED and ("drain", "i-2") not in events
    assert world.tags()[HEALTH_GATE_TAG] == WEB
    # The rerun, web still down: the gate is judged again first and fails, naming it; nothing is drained.
    down = Cluster(available=1)
    events, lines, failed = run(world, down, [["i-2"]], judged_first=True)
    assert failed.code == HEALTH_GATE_FAILED and failed.details["workloads"] == [WEB]
    assert "the health gate an earlier run failed, judged again" in failed.msg
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
        lambda line: None, lambda line: None)
    assert (gate is not None) == (gated and not check_mode)
    if check_mode:
        assert judged_first() is False and not cluster.calls
        return
    with pytest.raises(UpgradeError) as failed:
        judged_first()
    assert failed.value.code == HEALTH_GATE_FAILED and cluster.calls[:2] == [("pods", "default"), ("deployments", "default")]


# -- what a review of the first build found (issue 27 item 1) ----------------------------------------------------

def failing_gate():
    raise AssertionError("nothing is judged")


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
    assert gates.judged_again_first(record_of(world), failing_gate, lambda line: None, lambda line: None) is False


def test_issue27_item1_a_workload_name_longer_than_the_tag_leaves_the_others_named():
    """Issue 27 item 1: one workload's name (a Deployment's may be 253 characters) longer than the tag's 256 left
    only "+N" in the record, the names that fit after it dropped too; it is left out and counted, the others kept."""
    long_name = "StatefulSet " + "n" * 63 + "/" + "x" * 200
    assert record_failed_gate([long_name], jr.MAX_TAG_VALUE_LENGTH) == "+1"
    assert recorded_gate(record_failed_gate([long_name, "StatefulSet z/db", WEB], 256)) == (
        [WEB, "StatefulSet z/db"], 1)


@mock_aws
def test_issue27_item1_a_record_naming_no_workload_is_removed_with_a_warning_instead_of_kept_forever():
    """Issue 27 item 1: a record holding only "+N" (no name fits the tag) was never judged and never removed. The
    run cannot judge it: it says so in a warning, removes the record (changed) and goes on."""
    world = MotoNodegroup()
    jr.write_journal(world.autoscaling, ASG_NAME, jr.Journal.start("upgrade", health_gate_failed="+1"))
    warnings = []
    assert gates.judged_again_first(record_of(world), failing_gate, lambda line: None, warnings.append) is True
    assert HEALTH_GATE_TAG not in world.tags() and jr.read_journal(world.autoscaling, ASG_NAME).phase == "upgrade"
    assert len(warnings) == 1 and "failed on 1 workload(s) whose names are longer than" in warnings[0]
    assert "cannot judge them again" in warnings[0]


@mock_aws
def test_issue27_item1_a_failed_judgment_keeps_the_count_of_the_workloads_it_could_not_name():
    """Issue 27 item 1: a judgment that failed again rewrote the record with the names it judged only, dropping the
    "+N" of the workloads the first record could not name."""
    world = MotoNodegroup()
    jr.write_journal(world.autoscaling, ASG_NAME, jr.Journal.start("upgrade", health_gate_failed=WEB + ",+3"))
    events, _lines, failed = run(world, Cluster(available=1), [["i-2"]], judged_first=True)
    assert failed.code == HEALTH_GATE_FAILED and not events
    assert world.tags()[HEALTH_GATE_TAG] == WEB + ",+3"


class UnremovableRecord:
    """A record of WEB whose removal fails as a refused CreateOrUpdateTags/DeleteTags does."""

    def recorded(self):
        return [WEB], 0

    def failed(self, refs, left_out=0):
        raise AssertionError("the judgment passed")

    def clear(self):
        raise UpgradeError(API_ERROR, "DeleteTags: Throttling")


def test_issue27_item1_a_record_not_removed_after_a_healthy_judgment_is_a_warning_not_the_run_failure():
    """Issue 27 item 1: the record's removal after a healthy judgment failed the run with the AWS error; the
    workloads are healthy and the next run judges them again (harmless): a warning, and the run goes on."""
    cluster, warnings = Cluster(available=3), []
    gate = gates.HealthGate(cluster, cluster, batch_soak=0, timeout=60, clock=FakeClock())
    assert gates.judged_again_first(UnremovableRecord(), lambda: gate, lambda line: None, warnings.append) is False
    assert len(warnings) == 1 and "DeleteTags: Throttling" in warnings[0] and "next run reads it again" in warnings[0]
