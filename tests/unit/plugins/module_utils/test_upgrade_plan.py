# -*- coding: utf-8 -*-
# Copyright: Contributors to the eksops.nodegroup project
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""The upgrade plan (SPEC U2, U5, U7, S1-S4): strategy, parallelism, surge and the random batches."""

from __future__ import annotations

import random

import pytest
from hypothesis import given, strategies as st

from ansible_collections.eksops.nodegroup.plugins.module_utils.plan import upgrade_plan as plans
from ansible_collections.eksops.nodegroup.plugins.module_utils.errors import UpgradeError


def instances(count, cordoned=()):
    return [dict(instance_id="i-%03d" % i, unschedulable=i in cordoned) for i in range(count)]


def test_rolling_plan_surges_by_twice_the_azs():
    """U2 seed example: 5 AZs and max_unavailable 1 -> 10 new nodes; 20 -> 20."""
    plan = plans.upgrade_plan(instances(6), node_count=6, az_count=5, seed=1)
    assert (plan["strategy"], plan["surge"], plan["max_unavailable"], plan["batch_size"]) == ("rolling", 10, 1, 1)
    assert plans.upgrade_plan(instances(30), 30, 5, max_unavailable=20, seed=1)["surge"] == 20
    assert plan["steps"] is None and plan["seed"] == 1


def test_percentage_of_node_count():
    plan = plans.upgrade_plan(instances(10), node_count=10, az_count=3, max_unavailable_percentage=25, seed=1)
    assert plan["max_unavailable"] == 3
    assert [len(b) for b in plan["batches"]] == [3, 3, 3, 1]


def test_minimal_strategy_does_not_pre_scale():
    """U7."""
    plan = plans.upgrade_plan(instances(4), 4, 3, update_strategy="minimal", max_unavailable=2, seed=1)
    assert (plan["strategy"], plan["surge"], plan["batch_size"]) == ("minimal", 0, 2)


def test_surge_plan_replaces_surge_plus_unavailable_at_once():
    """S4 seed example: N=5, max_surge=2, max_unavailable=1: up to 3 old nodes replaced at once."""
    plan = plans.upgrade_plan(instances(5), 5, 3, max_surge=2, max_unavailable=1, seed=1)
    assert (plan["strategy"], plan["surge"], plan["batch_size"]) == ("surge", 2, 3)
    assert [len(b) for b in plan["batches"]] == [3, 2]
    assert plan["steps"][0]["desired_after_launch"] == 7
    assert [step["instance_ids"] for step in plan["steps"]] == plan["batches"]
    assert [step["desired_capacity"] for step in plan["steps"]] == [7, 7]
    assert plan["size_range"] == [4, 7]


def test_surge_plan_on_a_resumed_run_counts_the_nodes_already_replaced():
    """S4 after a crash: the group was 5 (group_size, the journal's), 2 are new, 3 old are left."""
    plan = plans.upgrade_plan(instances(3), 5, 3, max_surge=1, max_unavailable=1, seed=1, group_size=5)
    assert plan["size_range"] == [4, 6]
    assert [step["desired_capacity"] for step in plan["steps"]] == [6, 6]
    assert [i for step in plan["steps"] for i in step["instance_ids"]] == [i for batch in plan["batches"] for i in batch]


def test_surge_size_range_never_goes_below_zero_nodes():
    """S4 with max_unavailable above the node count: the group can lose every node, not more."""
    plan = plans.upgrade_plan(instances(2), 2, 3, max_surge=1, max_unavailable=5, seed=1)
    assert plan["size_range"] == [0, 3]


def test_only_a_surge_plan_has_steps_and_a_size_range():
    plan = plans.upgrade_plan(instances(3), 3, 3, seed=1)
    assert (plan["steps"], plan["size_range"]) == (None, None)


def test_surge_defaults_max_unavailable_to_zero():
    """S2: max_surge=1, max_unavailable=0."""
    plan = plans.upgrade_plan(instances(3), 3, 3, max_surge=1, seed=1)
    assert (plan["max_unavailable"], plan["batch_size"]) == (0, 1)


@pytest.mark.parametrize("kwargs, parameter", [
    (dict(max_surge=1, update_strategy="minimal"), "max_surge"),
    (dict(max_surge=0, max_unavailable=0), "max_surge"),
    (dict(max_surge=15, max_unavailable=10), "max_surge"),
    (dict(max_unavailable=0), "max_unavailable"),
    (dict(max_unavailable=101), "max_unavailable"),
    (dict(max_unavailable_percentage=0), "max_unavailable_percentage"),
])
def test_bad_parallelism_names_the_parameter(kwargs, parameter):
    with pytest.raises(UpgradeError) as raised:
        plans.upgrade_plan(instances(4), 4, 3, seed=1, **kwargs)
    assert raised.value.details["parameter"] == parameter


def test_batches_are_reproducible_with_a_seed_and_random_without():
    old = instances(20)
    first = plans.upgrade_plan(old, 20, 3, max_unavailable=3, seed=7)["batches"]
    assert plans.upgrade_plan(old, 20, 3, max_unavailable=3, seed=7)["batches"] == first
    assert plans.upgrade_plan(old, 20, 3, max_unavailable=3, seed=8)["batches"] != first
    drawn = plans.upgrade_plan(old, 20, 3, max_unavailable=3)
    assert plans.upgrade_plan(old, 20, 3, max_unavailable=3, seed=drawn["seed"])["batches"] == drawn["batches"]


def test_cordoned_nodes_come_first():
    """A rerun after a crash mid-batch finishes the nodes it already cordoned."""
    plan = plans.upgrade_plan(instances(6, cordoned=(4, 5)), 6, 3, max_unavailable=2, seed=3)
    assert sorted(plan["batches"][0]) == ["i-004", "i-005"]


@given(count=st.integers(0, 300), size=st.integers(1, 100), seed=st.integers(0, 2 ** 31))
def test_batches_cover_every_old_instance_once(count, size, seed):
    """U5: every old instance is replaced exactly once, at most max_unavailable at a time."""
    batches = plans.random_batches(instances(count), size, random.Random(seed))
    flat = [i for batch in batches for i in batch]
    assert sorted(flat) == ["i-%03d" % i for i in range(count)]
    assert all(1 <= len(batch) <= size for batch in batches)
    assert len(batches) == -(-count // size)
