# -*- coding: utf-8 -*-
# Copyright: Contributors to the eksops.nodegroup project
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Issue 27 item 7, batch_order zone: the plan's batches one Availability Zone after the other (plan/batch_order.py),
a health gate at the end of each zone (phases/replace/health_gate.py), and the strategies that cannot take it
refused before any change, naming batch_order."""

from __future__ import annotations

import pytest

from ansible_collections.eksops.nodegroup.plugins.module_utils.errors import INVALID_PARAMETER, UpgradeError
from ansible_collections.eksops.nodegroup.plugins.module_utils.phases.replace import health_gate as gates
from ansible_collections.eksops.nodegroup.plugins.module_utils.phases.replace.loop import Batch
from ansible_collections.eksops.nodegroup.plugins.module_utils.plan.batch_order import zone_batches

ZONE = {"i-1": "us-west-2b", "i-2": "us-west-2a", "i-3": "us-west-2b", "i-4": "us-west-2a", "i-5": "us-west-2c",
        "i-6": "us-west-2b"}


def test_issue27_item7_the_batches_go_one_zone_after_the_other_never_mixing_zones():
    plan = [["i-1", "i-2"], ["i-3", "i-4"], ["i-5", "i-6"]]
    assert zone_batches(plan, ZONE, 2) == [[["i-2", "i-4"]], [["i-1", "i-3"], ["i-6"]], [["i-5"]]]
    assert zone_batches(plan, ZONE, 1) == [[["i-2"], ["i-4"]], [["i-1"], ["i-3"], ["i-6"]], [["i-5"]]]


def test_issue27_item7_the_plan_in_zone_order_gates_the_end_of_each_zone_after_the_canary():
    plan = dict(strategy="rolling", batch_size=2, batches=[["i-1", "i-2"], ["i-3", "i-4"], ["i-5", "i-6"]])
    zoned = gates.ordered_plan(plan, ZONE, False, "zone")
    assert zoned["batches"] == [["i-2", "i-4"], ["i-1", "i-3"], ["i-6"], ["i-5"]]
    assert (zoned["zone_ends"], zoned["canary_batches"]) == ([1, 3, 4], 0)
    both = gates.ordered_plan(plan, ZONE, True, "zone")
    # The canary (the plan's first node in each zone: i-1, i-2, i-5), then the rest zone by zone.
    assert both["batches"] == [["i-1", "i-2"], ["i-5"], ["i-4"], ["i-3", "i-6"]]
    assert (both["canary_batches"], both["zone_ends"]) == (2, [3, 4])


def test_issue27_item7_each_zones_last_batch_is_gated_even_without_a_soak():
    gate = gates.HealthGate(None, None, 0, 60)
    placed = [Batch(["i-%d" % n]).ordered(n, dict(zone_ends=[2, 5])) for n in range(1, 6)]
    assert [gate.soak_for(b) for b in placed] == [None, 0, None, None, 0]
    soaked = gates.HealthGate(None, None, 45, 60)
    assert [soaked.soak_for(b) for b in placed[:2]] == [45, 45]


PARAMS = dict(batch_soak_seconds=0, canary_soak_seconds=0, health_gate_timeout=600, canary=False, batches=None,
              steps=None, batch_order="zone", max_surge=None, schedule="eks")


@pytest.mark.parametrize("changes", [dict(max_surge=1), dict(schedule="once"), dict(batches=[["i-1"]]),
                                     dict(steps=[])])
def test_issue27_item7_zone_order_is_refused_where_it_cannot_hold_naming_batch_order(changes):
    gates.validate_gates(PARAMS)
    with pytest.raises(UpgradeError) as err:
        gates.validate_gates(dict(PARAMS, **changes))
    assert (err.value.code, err.value.details["parameter"]) == (INVALID_PARAMETER, "batch_order")
