# -*- coding: utf-8 -*-
# Copyright: Contributors to the eksops.nodegroup project
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Issue 28 item 3: the fleet playbook under AWX's job slicing (docs/awx.md, *Job slicing*). AWX gives each job of a
sliced job template the inventory's hosts sorted by name, every job_slice_count-th from the slice's number on
(awx/main/models/inventory.py, Inventory.get_sliced_hosts and get_script_data), and runs those jobs at once. The plan
sees a slice by the node groups of its clusters (``cluster_nodegroups``, from the eks_nodegroups inventory) missing
from the job's inventory, and refuses, naming the parameter, a slice that would break per_cluster_concurrency or the
order of the rings."""

from __future__ import annotations

import pytest

from .test_issue28_item2_fleet_plan import FLEET, FIRST, RINGS
from ansible_collections.eksops.nodegroup.plugins.filter.fleet_plan import fleet_plan


def inventory_hosts():
    """FLEET as the eks_nodegroups inventory lists it: each host with its cluster's node groups."""
    clusters = {}
    for name in FLEET:
        clusters.setdefault(name.partition("/")[0], []).append(name)
    return {name: dict(host, cluster_nodegroups=sorted(clusters[name.partition("/")[0]])) for name, host in FLEET.items()}


def awx_slice(names, number, count):
    """The hosts of slice ``number`` of ``count``, as AWX's get_sliced_hosts deals them."""
    return sorted(names)[number - 1::count]


def plan(inventory, play=None, concurrency=1):
    hosts = inventory_hosts()
    play = inventory if play is None else play
    return fleet_plan(play, hosts, RINGS, FIRST, concurrency, inventory=inventory)


def test_issue28_item3_awx_deals_the_sandbox_fleet_so_every_slice_splits_clusters():
    assert [awx_slice(FLEET, number, 3) for number in (1, 2, 3)] == [
        ["fleet-canary/apps-arm", "fleet-eu/legacy", "fleet-west/batch"],
        ["fleet-canary/system", "fleet-eu/system", "fleet-west/system"],
        ["fleet-eu/apps", "fleet-west/apps"]]


def test_issue28_item3_the_whole_inventory_and_a_limit_are_no_slice():
    assert plan(sorted(FLEET))["error"] is None
    # A limit leaves the inventory whole: the documented resume without a bad node group.
    assert plan(sorted(FLEET), [name for name in FLEET if name != "fleet-canary/apps-arm"])["error"] is None


def test_issue28_item3_a_slice_that_splits_clusters_is_refused_naming_per_cluster_concurrency():
    error = plan(awx_slice(FLEET, 1, 3))["error"]
    assert error["parameter"] == "per_cluster_concurrency"
    assert "fleet-west (3 node groups: fleet-west/apps, fleet-west/batch, fleet-west/system)" in error["msg"]
    assert "job_slice_count 1" in error["msg"]


def test_issue28_item3_a_slice_of_several_rings_is_refused_naming_fleet_rings():
    error = plan(awx_slice(FLEET, 1, 3), concurrency=3)["error"]
    assert error["parameter"] == "fleet_rings"
    assert "['canary', 'ring2']" in error["msg"] and "ring_ring2" in error["msg"]


def test_issue28_item3_a_slice_of_one_ring_with_independent_node_groups_is_planned():
    inventory = awx_slice(FLEET, 2, 3)
    ring1 = [name for name in inventory if FLEET[name]["nodegroup_tags"]["upgrade-ring"] == "ring1"]
    planned = plan(inventory, ring1, concurrency=3)
    assert planned["error"] is None
    assert [(step["ring"], step["hosts"]) for step in planned["steps"]] == [
        ("ring1", ["fleet-eu/system", "fleet-west/system"])]


@pytest.mark.parametrize("number", [1, 2, 3])
def test_issue28_item3_hosts_of_another_inventory_are_never_taken_for_a_slice(number):
    hosts = dict(FLEET)  # no cluster_nodegroups: an inventory of hand-written hosts
    names = awx_slice(FLEET, number, 3)
    assert fleet_plan(names, hosts, RINGS, FIRST, 1, inventory=names)["error"] is None
