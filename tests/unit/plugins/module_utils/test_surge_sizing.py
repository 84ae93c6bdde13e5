# -*- coding: utf-8 -*-
# Copyright: Contributors to the eksops.nodegroup project
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""The surge sized to need (issue 11 item 2; SPEC B2, U2, U3): ``surge: per_az`` against Auto Scaling's
balanced placement, simulated here with every way it may break ties."""

from __future__ import annotations

import random

import pytest
from hypothesis import given, settings, strategies as st

from ansible_collections.eksops.nodegroup.plugins.module_utils.plan import parallelism
from ansible_collections.eksops.nodegroup.plugins.module_utils.plan.placement import launches_to_reach
from ansible_collections.eksops.nodegroup.plugins.module_utils.errors import INVALID_PARAMETER, UpgradeError
from ansible_collections.eksops.nodegroup.plugins.module_utils.plan.upgrade_plan import upgrade_plan

A, B, C, D = "us-west-2a", "us-west-2b", "us-west-2c", "us-west-2d"


def place(az_counts, launches, tie_break):
    """Where Auto Scaling puts ``launches`` instances: each in an AZ with the fewest instances (Auto Scaling user
    guide, "Availability Zone distribution"), ``tie_break`` choosing among those (it gets the tied AZs in the
    group's order and the launches so far). Returns the new instances per AZ."""
    counts = dict(az_counts)
    new = dict.fromkeys(counts, 0)
    for _launch in range(launches):
        fewest = min(counts.values())
        az = tie_break([az for az in counts if counts[az] == fewest], new)
        counts[az] += 1
        new[az] += 1
    return new


def first_in_order(tied, _new):
    """The sandbox's tie-break (tests/sandbox/eks_sandbox/aws/capacity.py): the group's first AZ."""
    return tied[0]


def adversary(old_azs):
    """The tie-break that keeps a new node from the AZs holding old nodes as long as it can: AZs that need none
    (or have one already) first."""
    def choose(tied, new):
        return min(tied, key=lambda az: (az in old_azs and new[az] == 0, tied.index(az)))
    return choose


def at_random(rng):
    def choose(tied, _new):
        return rng.choice(tied)
    return choose


def reached(new, old_azs):
    return all(new[az] > 0 for az in old_azs)


def per_az(az_counts, old_azs, max_unavailable):
    """The surge of ``surge: per_az``, resolved where every phase resolves it."""
    return parallelism.rolling_parallelism(sum(az_counts.values()), len(az_counts), max_unavailable, surge="per_az",
                                           az_counts=az_counts, old_azs=old_azs)["surge"]


def test_a_two_node_group_over_three_azs_needs_four_launches_to_be_sure_of_u3():
    """Issue 11 item 2's done-when ("2 extra nodes, not 6"), honestly: an Auto Scaling group puts 2 nodes over 3
    AZs in two of them (a: 1, b: 1, c: 0). The first launch goes to the empty AZ c, so 2 launches can never
    reach both a and b (U3). After it, a, b and c hold one each and Auto Scaling documents no order among them:
    the second launch may go to c again, and only the fourth is sure to have reached a and b. So per_az is 4,
    against EKS's max(2 x 3, 1) = 6; with the sandbox's tie-break (its first AZ) 3 would have done."""
    counts, old = {A: 1, B: 1, C: 0}, {A, B}
    assert per_az(counts, old, 1) == 4
    assert parallelism.rolling_surge(3, 1) == 6
    assert not reached(place(counts, 2, first_in_order), old)
    assert reached(place(counts, 3, first_in_order), old)
    assert not reached(place(counts, 3, adversary(old)), old)
    assert place(counts, 4, adversary(old)) == {A: 1, B: 1, C: 2}


@pytest.mark.parametrize("counts, old, max_unavailable, surge", [
    # A 2-node group over 2 AZs: one launch each, whatever the order.
    ({A: 1, B: 1}, {A, B}, 1, 2),
    # One node per AZ, every AZ old: one round.
    ({A: 1, B: 1, C: 1}, {A, B, C}, 1, 3),
    ({A: 2, B: 2, C: 2}, {A, B, C}, 1, 3),
    # 5 nodes over 3 AZs: c first, then a tie of three that may go to c again.
    ({A: 2, B: 2, C: 1}, {A, B, C}, 1, 4),
    # Old nodes left in one AZ only (a resumed upgrade): that AZ must be reached, the others are filled up to it.
    ({A: 1, B: 2, C: 2}, {A}, 1, 1),
    ({A: 2, B: 2, C: 2}, {A}, 1, 3),
    # max_unavailable above what U3 needs: max_unavailable nodes (Auto Scaling spreads them).
    ({A: 1, B: 1, C: 1}, {A, B, C}, 5, 5),
    ({A: 1, B: 1, C: 1}, {A, B, C}, 10, 10),
    # Out of balance (AZRebalance suspended): reaching a takes 7 (b and c to 3 each, then a), more than EKS's 6,
    # which cannot reach a either: per_az launches EKS's count and U3's check names the AZ.
    ({A: 2, B: 0, C: 0}, {A}, 1, 6),
    # Old nodes in an AZ the group no longer launches into: no launch reaches it; EKS's count.
    ({A: 1, B: 1}, {A, C}, 1, 4),
])
def test_per_az_shapes(counts, old, max_unavailable, surge):
    assert per_az(counts, old, max_unavailable) == surge


def test_the_count_is_the_fewest_that_reaches_every_old_az_under_any_tie_break():
    counts, old = {A: 2, B: 2, C: 1, D: 1}, {A, C}
    needed = launches_to_reach(counts, old)
    assert needed == 6
    assert reached(place(counts, needed, adversary(old)), old)
    assert not reached(place(counts, needed - 1, adversary(old)), old)


def shapes():
    """Groups of 1-6 AZs with 0-12 instances each, old nodes in a non-empty subset of the AZs that have any."""
    def with_old(counts):
        occupied = sorted(az for az, count in counts.items() if count)
        if not occupied:
            return st.just((counts, set()))
        return st.sets(st.sampled_from(occupied), min_size=1).map(lambda old: (counts, old))
    azs = st.integers(1, 6).map(lambda n: ["az-%d" % i for i in range(n)])
    counts = azs.flatmap(lambda names: st.lists(st.integers(0, 12), min_size=len(names), max_size=len(names))
                         .map(lambda values: dict(zip(names, values))))
    return counts.flatmap(with_old)


@settings(max_examples=400, deadline=None)
@given(shape=shapes(), max_unavailable=st.integers(1, 100), seed=st.integers(0, 2 ** 16))
def test_property_per_az_never_exceeds_eks_reaches_every_old_az_and_is_at_least_max_unavailable(
        shape, max_unavailable, seed):
    """SPEC B2 with U2 and U3, for any group: per_az launches no more than EKS's count and at least
    max_unavailable; whenever EKS's count itself is sure to reach every AZ holding old nodes, per_az is too,
    under the sandbox's tie-break, a random one and the adversary's; and one launch fewer than U3 needs is not
    sure to (the count is the fewest)."""
    counts, old = shape
    eks = parallelism.rolling_surge(len(counts), max_unavailable)
    surge = per_az(counts, old, max_unavailable)
    assert max_unavailable <= surge <= eks
    needed = launches_to_reach(counts, old)
    if needed is not None and needed <= eks:
        for tie_break in (first_in_order, at_random(random.Random(seed)), adversary(old)):
            assert reached(place(counts, surge, tie_break), old)
        if needed > 0:
            assert not reached(place(counts, needed - 1, adversary(old)), old)
    if max(counts.values()) - min(counts.values()) <= 1:
        # A balanced group: EKS's 2 x AZs is always enough (the planner's docstring says so).
        assert needed is not None and needed < 2 * len(counts)


def test_rolling_parallelism_is_the_one_place_the_sizing_is_resolved():
    counts = {A: 1, B: 1, C: 0}
    assert parallelism.rolling_parallelism(2, 3, 1, surge="per_az", az_counts=counts, old_azs=[A, B]) == dict(
        max_unavailable=1, surge=4, batch_size=1)
    assert parallelism.rolling_parallelism(2, 3, 1) == dict(max_unavailable=1, surge=6, batch_size=1)
    assert parallelism.rolling_parallelism(2, 3, 1, minimal=True, surge="per_az", az_counts=counts,
                                           old_azs=[A])["surge"] == 0
    with pytest.raises(UpgradeError) as refused:
        parallelism.rolling_parallelism(2, 3, 1, surge="some")
    assert refused.value.code == INVALID_PARAMETER and refused.value.details["parameter"] == "surge"
    with pytest.raises(ValueError):
        parallelism.rolling_parallelism(2, 3, 1, surge="per_az")


def test_the_upgrade_plan_shows_the_per_az_surge_and_a_rerun_the_journals():
    """The dry run's plan (nodegroup_info -> upgrade_plan) resolves the surge where asg_surge does, and while an
    upgrade is under way shows the surge the journal recorded, not one sized from the surged group."""
    old = [dict(instance_id="i-1", availability_zone=A), dict(instance_id="i-2", availability_zone=B)]
    plan = upgrade_plan(old, node_count=2, az_count=3, surge_sizing="per_az", az_counts={A: 1, B: 1, C: 0}, seed=1)
    assert (plan["surge"], plan["surge_sizing"], plan["desired_capacity_during"]) == (4, "per_az", 6)
    assert upgrade_plan(old, node_count=2, az_count=3, seed=1)["surge"] == 6
    resumed = upgrade_plan(old, node_count=6, az_count=3, group_size=2, surge_sizing="per_az",
                           az_counts={A: 3, B: 2, C: 1}, recorded_surge=4, seed=1)
    assert (resumed["surge"], resumed["desired_capacity_during"]) == (4, 6)
    assert upgrade_plan(old, node_count=2, az_count=3, update_strategy="minimal", surge_sizing="per_az",
                        az_counts={A: 1, B: 1, C: 0}, seed=1)["surge"] == 0
