# -*- coding: utf-8 -*-
# Copyright: Contributors to the eksops.nodegroup project
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""The work_bound filter (issue 27 item 4): the wrapper role's safe points ask it how long the work after them may
take, by the rule node_replace applies to its batches; the playbooks' values arrive as strings from an AWX survey."""

from __future__ import annotations

import itertools

import pytest

from ansible_collections.eksops.nodegroup.plugins.filter.work_bound import FilterModule, work_bound
from ansible_collections.eksops.nodegroup.plugins.module_utils.phases.replace import health_gate as gates
from ansible_collections.eksops.nodegroup.plugins.module_utils.plan.workload_health import any_batch_gated

RUN = dict(strategy="default", drain_timeout=900, post_drain_wait=60, node_ready_timeout=900, batch_soak_seconds=0,
           canary=False, canary_soak_seconds=0, batch_order="random", health_gate_timeout=600)


def test_the_filter_is_registered_by_its_name():
    assert FilterModule().filters() == {"work_bound": work_bound}


def test_the_start_counts_the_scale_up_and_a_first_batch_and_the_scale_down_a_surplus_node():
    assert work_bound(RUN, "start") == work_bound(RUN, "scale_up") == 900 + 900 + 60 + 900
    assert work_bound(RUN, "scale_down") == 900 + 60 + 900
    assert work_bound(dict(RUN, strategy="surge"), "start") == 900 + 900 + 60 + 900


def test_survey_strings_are_read_as_the_values_they_name():
    survey = dict(RUN, drain_timeout="300", canary="false", batch_soak_seconds="0", node_ready_timeout="300")
    assert work_bound(survey, "scale_down") == 300 + 60 + 300
    assert work_bound(dict(survey, canary="true", canary_soak_seconds="120"), "scale_down") == 660
    assert work_bound(dict(survey, canary="true", canary_soak_seconds="120"), "start") == 300 + 660 + 120 + 600


def test_an_unknown_safe_point_is_refused():
    with pytest.raises(ValueError, match="after must be one of start, scale_up, scale_down"):
        work_bound(RUN, "upgrade")


@pytest.mark.parametrize("soak, canary, zone", list(itertools.product((0, 30), (False, True), (False, True))))
def test_issue27_item1_item4_one_predicate_says_whether_any_batch_is_gated_for_the_time_bounds_and_the_loop(
        monkeypatch, soak, canary, zone):
    """The wrapper's time bounds (work_bound, from the options) and node_replace's gate (from the plan ordered as
    asked: a canary and zone ends planned) agree, both any_batch_gated."""
    monkeypatch.setattr(gates, "apps_v1", lambda api_client: None)
    clients = type("Clients", (), dict(core_v1=lambda self: None, k8s=lambda self: None))()
    options = dict(RUN, batch_soak_seconds=soak, canary=canary, batch_order="zone" if zone else "random")
    ungated = dict(options, batch_soak_seconds=0, canary=False, batch_order="random")
    bounded = work_bound(options, "scale_up") > work_bound(ungated, "scale_up")
    plan = dict(strategy="rolling", batch_size=1, batches=[["i-1"], ["i-2"], ["i-3"]])
    order = gates.ordered_plan(plan, {"i-1": "a", "i-2": "a", "i-3": "b"}, canary, options["batch_order"])
    built = gates.health_gate(options, clients, order) is not None
    assert bounded == built == any_batch_gated(soak, canary, zone) == bool(soak or canary or zone)
