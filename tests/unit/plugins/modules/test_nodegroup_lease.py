# -*- coding: utf-8 -*-
# Copyright: Contributors to the eksops.nodegroup project
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""nodegroup_lease run in-process against moto (issue 10 item 21): it releases its own run's lease only, and check
mode changes nothing."""

from __future__ import annotations

import pytest
from moto import mock_aws

from ansible_collections.eksops.nodegroup.plugins.module_utils.nodegroup import lease
from ansible_collections.eksops.nodegroup.plugins.modules import nodegroup_lease

from ..moto_nodegroup import CLUSTER, NODEGROUP, MotoNodegroup, run_module_in_process

BASE = dict(cluster_name=CLUSTER, nodegroup_name=NODEGROUP)


@pytest.fixture
def world():
    with mock_aws():
        world = MotoNodegroup(desired=2)
        world.autoscaling.create_or_update_tags(Tags=[dict(
            ResourceId=world.asg_name, ResourceType="auto-scaling-group", Key=lease.LEASE_TAG,
            Value=lease.lease_value("run-a"), PropagateAtLaunch=False)])
        yield world


@pytest.fixture
def run(capsys):
    def run_it(check=False, **args):
        return run_module_in_process(nodegroup_lease.main, dict(BASE, **args), capsys, check=check)
    return run_it


def held_by(world):
    found = lease.lease_of(world.asg().get("Tags"))
    return found[0] if found else None


def test_check_mode_reports_the_release_and_keeps_the_lease(world, run):
    result = run(check=True, lease_id="run-a")
    assert result["changed"] is True and result["lease"] == dict(lease_id="run-a", released=True)
    assert held_by(world) == "run-a"


def test_the_runs_own_lease_is_released(world, run):
    result = run(lease_id="run-a")
    assert result["changed"] is True and result["lease"]["released"] is True
    assert held_by(world) is None
    again = run(lease_id="run-a")
    assert again["changed"] is False and again["lease"]["released"] is False


def test_another_runs_lease_is_left_alone(world, run):
    result = run(lease_id="run-b")
    assert result["changed"] is False and result["lease"] == dict(lease_id="run-b", released=False)
    assert held_by(world) == "run-a"
