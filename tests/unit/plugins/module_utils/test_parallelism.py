# -*- coding: utf-8 -*-
# Copyright: Contributors to the eksops.nodegroup project
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""One parameter, one answer: max_unavailable_percentage resolves to the same node count at scale-up and in the
batches (issue 12; SPEC U1, U2, U5)."""

from __future__ import annotations

from hypothesis import given, strategies as st

from ansible_collections.eksops.nodegroup.plugins.module_utils.plan.parallelism import rolling_parallelism
from ansible_collections.eksops.nodegroup.plugins.module_utils.plan.upgrade_plan import upgrade_plan
from ansible_collections.eksops.nodegroup.plugins.module_utils.steps import asg_surge as surge_step

AZS = ["us-west-2a", "us-west-2b", "us-west-2c"]


def old_instances(count):
    return [dict(instance_id="i-%03d" % index) for index in range(count)]


def scale_up(group_size, azs, **parallelism):
    """(desired capacity, surge) asg_surge's rolling mode sets, the journal recording ``group_size``."""
    params = dict(mode="rolling", surge_sizing="eks", max_unavailable=None, max_unavailable_percentage=None)
    params.update(parallelism)
    return surge_step.target_desired(params, {"AvailabilityZones": list(azs)}, group_size)


def test_issue12_twenty_percent_of_ten_nodes_in_three_azs_is_two_at_scale_up_and_in_every_batch():
    """Issue 12, "one parameter, one answer" (SPEC U1 parallelism, U2 scale-up, U5 batches): 20 % of 10 nodes in 3
    AZs was 2 at scale-up but batches of 3, the batches taking the percentage of the surged group. Resolved once
    against the group's size before the upgrade it is 2: the scale-up adds max(2 x 3 AZs, 2) = 6 nodes and the 10
    old nodes go 2 at a time, never 3, whether a phase gets the percentage or the count the setup phase resolved."""
    resolved = rolling_parallelism(10, len(AZS), max_unavailable_percentage=20)
    assert resolved == dict(max_unavailable=2, surge=6, batch_size=2)

    # Setup phase (nodegroup_info before any change): 10 old nodes, the group's size 10.
    setup = upgrade_plan(old_instances(10), node_count=10, az_count=3, max_unavailable_percentage=20, seed=5)
    assert setup["max_unavailable"] == resolved["max_unavailable"] == 2

    # Scale-up phase (asg_surge): from the percentage, and from the count the wrapper role passes on.
    assert scale_up(10, AZS, max_unavailable_percentage=20) == (16, 6)
    assert scale_up(10, AZS, max_unavailable=setup["max_unavailable"]) == (16, 6)

    # Upgrade phase (nodegroup_info again, the group surged to 16 nodes, its size before the upgrade from the journal).
    for parallelism in (dict(max_unavailable_percentage=20), dict(max_unavailable=setup["max_unavailable"])):
        plan = upgrade_plan(old_instances(10), node_count=16, az_count=3, group_size=10, seed=5, **parallelism)
        assert (plan["max_unavailable"], plan["batch_size"], plan["surge"]) == (2, 2, 6)
        assert plan["desired_capacity_during"] == 16
        assert [len(batch) for batch in plan["batches"]] == [2, 2, 2, 2, 2]
        assert plan["batches"] == setup["batches"]


@given(group_size=st.integers(1, 300), az_count=st.integers(1, 6), percentage=st.integers(1, 100),
       surged_by=st.integers(0, 100))
def test_issue12_any_percentage_gives_one_count_at_scale_up_and_in_the_batches(
        group_size, az_count, percentage, surged_by):
    """Issue 12 (SPEC U1, U2, U5): for any group, the surge asg_surge adds and the batch size of the upgrade plan,
    however far the group is surged when the plan is made, come from the one resolved max_unavailable."""
    resolved = rolling_parallelism(group_size, az_count, max_unavailable_percentage=percentage)
    azs = ["az-%d" % index for index in range(az_count)]
    wanted = (group_size + resolved["surge"], resolved["surge"])
    assert scale_up(group_size, azs, max_unavailable_percentage=percentage) == wanted
    plan = upgrade_plan(old_instances(group_size), node_count=group_size + surged_by, az_count=az_count,
                        group_size=group_size, max_unavailable_percentage=percentage, seed=1)
    assert plan["batch_size"] == plan["max_unavailable"] == resolved["max_unavailable"]
    assert all(len(batch) == resolved["max_unavailable"] for batch in plan["batches"][:-1])
    assert plan["surge"] == resolved["surge"]
