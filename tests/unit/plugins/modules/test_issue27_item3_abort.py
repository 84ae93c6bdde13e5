# -*- coding: utf-8 -*-
# Copyright: Contributors to the eksops.nodegroup project
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Issue 27 item 3: nodegroup_abort, the first step of an abort, run in-process against moto with the Kubernetes side
faked. Under the run's lease it withdraws a pause request and gives back the nodes the upgrade's run cordoned (not
its surplus nodes, which the restore handles, nor another's cordon); with rollback it records rollback_of once, so a
rerun goes on rolling back. A live run's lease refuses it; a managed node group is refused (SPEC K3)."""

from __future__ import annotations

from unittest import mock

import pytest
from moto import mock_aws

from ansible_collections.eksops.nodegroup.plugins.module_utils.host.module import EksopsModule
from ansible_collections.eksops.nodegroup.plugins.module_utils.members.group_nodes import node_view
from ansible_collections.eksops.nodegroup.plugins.module_utils.nodegroup import lease, pause
from ansible_collections.eksops.nodegroup.plugins.module_utils.nodegroup.discovery import NodegroupRef
from ansible_collections.eksops.nodegroup.plugins.module_utils.nodegroup.journal import (
    CORDONED_BY_ANNOTATION,
    SURPLUS_ANNOTATION,
    Journal,
    read_journal,
    write_journal,
)
from ansible_collections.eksops.nodegroup.plugins.module_utils.nodegroup.kinds import MANAGED
from ansible_collections.eksops.nodegroup.plugins.module_utils.steps import nodegroup_abort as abort_step
from ansible_collections.eksops.nodegroup.plugins.modules import nodegroup_abort

from ..moto_nodegroup import CLUSTER, NODEGROUP, MotoNodegroup, run_module_in_process

BASE = dict(cluster_name=CLUSTER, nodegroup_name=NODEGROUP, kubeconfig="/unused", lease_id="abort-1")
JOURNAL = dict(run_id="run-1", phase="upgrade", previous_launch_template_version="1",
               target_launch_template_version="2")


def node(name, annotations=None):
    return node_view({"metadata": {"name": name, "labels": {}, "annotations": dict(annotations or {})},
                      "spec": {"unschedulable": bool(annotations)}, "status": {}})


NODES = [node("old-cordoned", {CORDONED_BY_ANNOTATION: "run-1"}),
         node("old-label-only", {CORDONED_BY_ANNOTATION: "run-1; set=label"}),
         node("by-an-operator"),
         node("other-run", {CORDONED_BY_ANNOTATION: "run-0"}),
         node("surplus", {CORDONED_BY_ANNOTATION: "run-1", SURPLUS_ANNOTATION: "run-1"}),
         node("serving")]


@pytest.fixture
def world():
    with mock_aws():
        world = MotoNodegroup(desired=2)
        write_journal(world.autoscaling, world.asg_name, Journal.start(**JOURNAL))
        yield world


def set_tag(world, key, value):
    world.autoscaling.create_or_update_tags(Tags=[dict(ResourceId=world.asg_name, ResourceType="auto-scaling-group",
                                                       Key=key, Value=value, PropagateAtLaunch=False)])


@pytest.fixture
def run(capsys):
    def run_it(check=False, diff=False, **args):
        uncordoned = []

        def uncordon(core_v1, names, run_id=None, log=None):
            uncordoned.append((list(names), run_id))
        with mock.patch.object(EksopsModule, "core_v1", lambda self: None), \
                mock.patch.object(abort_step, "list_nodegroup_nodes", lambda core_v1, group: NODES), \
                mock.patch.object(abort_step, "uncordon_nodes", uncordon):
            result = run_module_in_process(nodegroup_abort.main, dict(BASE, **args), capsys, check=check, diff=diff)
        return result, uncordoned
    return run_it


def test_issue27_item3_the_runs_cordons_are_given_back_not_its_surplus_nor_anothers():
    assert abort_step.run_cordons(NODES, "run-1") == ["old-cordoned", "old-label-only"]
    assert abort_step.run_cordons(NODES, None) == []


def test_issue27_item3_abort_uncordons_withdraws_the_pause_and_holds_the_lease(world, run):
    set_tag(world, pause.PAUSE_TAG, "2026-11-28T21:00:00Z alice")
    result, uncordoned = run()
    assert result["changed"] is True
    assert uncordoned == [(["old-cordoned", "old-label-only"], "run-1")]
    assert result["abort"]["pause_withdrawn"] is True and pause.PAUSE_TAG not in world.tags()
    assert lease.lease_of(world.asg()["Tags"])[0] == "abort-1"
    assert result["abort"]["journal"]["run_id"] == "run-1" and result["abort"]["rollback_version"] is None
    assert read_journal(world.autoscaling, world.asg_name) == Journal.start(**JOURNAL).replace(
        started_at=result["abort"]["journal"]["started_at"])


def test_issue27_item3_a_live_run_refuses_the_abort_before_any_change(world, run):
    set_tag(world, lease.LEASE_TAG, lease.lease_value("live-run"))
    result, uncordoned = run()
    assert result["failed"] is True and result["code"] == "UpgradeInProgress" and uncordoned == []


def test_issue27_item3_rollback_is_recorded_once_and_a_rerun_goes_on(world, run):
    result, _uncordoned = run(rollback=True)
    assert result["abort"]["rollback_version"] == "1"
    assert read_journal(world.autoscaling, world.asg_name).rollback_of == "2"
    # The role points the journal back at version 1 (launch_template_version, force_new_target): a rerun of the
    # abort finds rollback_of and goes on rolling back to the version the upgrade started from.
    journal = read_journal(world.autoscaling, world.asg_name)
    write_journal(world.autoscaling, world.asg_name, journal.retargeted(journal.launch_template_id, "1", None, "2"),
                  previous=journal)
    again, _uncordoned = run(rollback=True)
    assert again["abort"]["rollback_version"] == "1" and again["abort"]["journal"]["rollback_of"] == "2"


def test_issue27_item3_rollback_of_an_upgrade_to_its_own_version_is_refused(world, run):
    journal = read_journal(world.autoscaling, world.asg_name)
    write_journal(world.autoscaling, world.asg_name, journal.replace(previous_launch_template_version="2"),
                  previous=journal)
    result, uncordoned = run(rollback=True)
    assert result["failed"] is True and result["parameter"] == "rollback" and uncordoned == []
    assert lease.lease_of(world.asg()["Tags"]) is None


def test_issue27_item3_check_mode_and_diff_change_nothing(world, run):
    set_tag(world, pause.PAUSE_TAG, "2026-11-28T21:00:00Z alice")
    result, uncordoned = run(check=True, diff=True, rollback=True)
    assert result["changed"] is True and uncordoned == []
    assert result["diff"]["before"]["cordoned_nodes"] == ["old-cordoned", "old-label-only"]
    assert result["diff"]["after"] == dict(cordoned_nodes=[], rollback_of="2")
    assert pause.PAUSE_TAG in world.tags() and read_journal(world.autoscaling, world.asg_name).rollback_of is None


def test_issue27_item3_no_journal_nothing_to_abort(capsys):
    with mock_aws():
        MotoNodegroup(desired=2)
        with mock.patch.object(EksopsModule, "core_v1", lambda self: None):
            result = run_module_in_process(nodegroup_abort.main, dict(BASE), capsys)
    assert result["changed"] is False and result["abort"]["journal"] is None


def test_issue27_item3_k3_a_managed_group_is_refused_saying_what_eks_allows(capsys):
    with mock_aws():
        MotoNodegroup(desired=2, kind=MANAGED)
        result = run_module_in_process(nodegroup_abort.main, dict(BASE), capsys)
    assert result["failed"] is True and result["parameter"] == "nodegroup_name"
    assert "no cancel" in result["msg"] and "release_version" in result["msg"]
    assert result["msg"].endswith("Nothing was changed.")


@pytest.mark.parametrize("status, says", [
    ("UPDATING", "EKS's update of it is under way (status UPDATING): wait until it has ended"),
    ("ACTIVE", "No EKS update of it is under way (status ACTIVE, release 1.30.0-20240615): to roll it back"),
])
def test_issue27_item3_k3_the_managed_refusal_says_whether_to_wait_for_eks_and_what_to_run(status, says):
    """EKS cancels no node group update (CancelUpdate: an Auto Mode cluster's VersionRollback only) and records no
    release to go back to: the refusal says, from DescribeNodegroup, whether to wait for EKS's update first."""
    group = NodegroupRef(CLUSTER, NODEGROUP, MANAGED, {"AutoScalingGroupName": "eks-workers-1"},
                         managed={"status": status, "releaseVersion": "1.30.0-20240615"})
    error = abort_step.managed_abort_refusal(group)
    assert says in str(error) and "CancelUpdate" in str(error) and "release_version" in str(error)


def journal_in(world, **changes):
    journal = read_journal(world.autoscaling, world.asg_name)
    write_journal(world.autoscaling, world.asg_name, journal.replace(**changes), previous=journal)


def test_issue27_item3_rollback_from_phase_setup_has_nothing_to_roll_back(world, run):
    """An upgrade stopped in its setup (its journal never scaled: no surge, no batch) changed no node: the rollback
    points the group back and restores it (the role), without rollback_of, so no upgrade (and no surge) is run."""
    journal_in(world, phase="setup")
    result, uncordoned = run(rollback=True)
    assert result["abort"]["nothing_to_roll_back"] is True and result["abort"]["rollback_version"] == "1"
    assert uncordoned == [(["old-cordoned", "old-label-only"], "run-1")]
    assert read_journal(world.autoscaling, world.asg_name).rollback_of is None
    # Killed once pointed back (the journal retargeted at version 1 by launch_template_version), the rerun finds
    # nothing to roll back still, where an upgrade to its own version would be refused.
    journal = read_journal(world.autoscaling, world.asg_name)
    write_journal(world.autoscaling, world.asg_name, journal.retargeted(journal.launch_template_id, "1", None, "2"),
                  previous=journal)
    again, _uncordoned = run(rollback=True)
    assert again["abort"]["nothing_to_roll_back"] is True and again["abort"]["rollback_version"] == "1"


@pytest.mark.parametrize("changes", [
    # Retargeted back to setup after a scale-up (force_new_target): the nodes of the first target are to roll back.
    dict(phase="setup", desired_capacity_set=3),
    # The rollback's own journal, retargeted at the version it rolls back to.
    dict(phase="setup", rollback_of="3"),
    dict(phase="upgrade"),
])
def test_issue27_item3_rollback_after_a_scale_up_replaces_nodes(world, run, changes):
    journal_in(world, **changes)
    result, _uncordoned = run(rollback=True)
    assert result["abort"]["nothing_to_roll_back"] is False and result["abort"]["rollback_version"] == "1"
    assert read_journal(world.autoscaling, world.asg_name).rollback_of is not None


@pytest.mark.parametrize("versions, nothing", [
    (["1", "1"], True),
    # Older than the version the upgrade started from: not this upgrade's change, not its rollback's.
    (["0", "1"], True),
    # Launched once setup pointed the group at the target (a cluster autoscaler's scale-out): it runs the target.
    (["1", "2"], False),
])
def test_issue27_item3_rollback_from_phase_setup_replaces_only_a_node_launched_from_the_target(versions, nothing):
    journal = Journal.start(**JOURNAL).replace(phase="setup")
    instances = [dict(InstanceId="i-%d" % index, LifecycleState="InService",
                      LaunchTemplate=dict(LaunchTemplateId="lt-1", Version=version))
                 for index, version in enumerate(versions)]
    # An instance leaving the group is not rolled back: it is going.
    leaving = dict(InstanceId="i-leaving", LifecycleState="Terminating", LaunchTemplate=dict(Version="2"))
    assert abort_step.nothing_to_roll_back(journal, instances + [leaving]) is nothing
