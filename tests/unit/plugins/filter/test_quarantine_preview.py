# -*- coding: utf-8 -*-
# Copyright: Contributors to the eksops.nodegroup project
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""The quarantine_preview filter (issue 27 item 5): the wrapper role's dry run asks it what undrainable_nodes
quarantine would do; the playbooks' values arrive as strings from an AWX survey."""

from __future__ import annotations

from ansible_collections.eksops.nodegroup.plugins.filter.quarantine_preview import FilterModule, quarantine_preview


def test_the_filter_is_registered_by_its_name_and_reads_survey_strings():
    assert FilterModule().filters() == {"quarantine_preview": quarantine_preview}
    plan = dict(batches=[["i-1"], ["i-2"]], max_quarantined_nodes="1", force="false", drain_timeout="300",
                instances=[dict(instance_id="i-1", node_name="n1", labels={}),
                           dict(instance_id="i-2", node_name="n2", labels={})],
                findings=[dict(check="blocking_pdb", kind="PodDisruptionBudget", namespace="default", name="billing",
                               nodes=["n2"])])
    shown = quarantine_preview(plan)
    assert [h["node"] for h in shown["held"]] == ["n2"] and "drain_timeout (300 s)" in shown["lines"][0]
    assert quarantine_preview(dict(plan, force="true"))["held"] == []
    # Issue 27 item 5 review 4: the role says when the run draws its own batches (a string from Jinja).
    assert "about batch 2" in quarantine_preview(dict(plan, approximate="true"))["lines"][0]
    assert "about" not in quarantine_preview(dict(plan, approximate="false"))["lines"][0]
