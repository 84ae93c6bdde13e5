# -*- coding: utf-8 -*-
# Copyright: Contributors to the eksops.nodegroup project
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Cordon and uncordon (_drain/cordon.py, SPEC D1, U4, C1): the patches, the marks that say which run changed
what (undo only that), and cordon_nodes / uncordon_nodes on the fake API."""

from __future__ import annotations

import pytest

from ansible_collections.eksops.nodegroup.plugins.module_utils._drain.cordon import (
    AUTOSCALER_TAINT,
    EXCLUDE_LB_LABEL,
    apply_merge_patch,
    check_not_autoscaler_target,
    cordon_mark,
    cordon_nodes,
    cordon_patch,
    parse_cordon_mark,
    uncordon_nodes,
    uncordon_patch,
)
from ansible_collections.eksops.nodegroup.plugins.module_utils.errors import UpgradeError
from ansible_collections.eksops.nodegroup.plugins.module_utils.nodegroup.journal import CORDONED_BY_ANNOTATION

from ...fakes import FakeCluster, make_pod, node, run_drain


# ----------------------------------------------------------------------------------------------------------
# Patches (D1, U4) and the autoscaler's taint (C1)
# ----------------------------------------------------------------------------------------------------------

def test_D1_U4_cordon_patch_sets_only_what_is_missing():
    patch = cordon_patch(node(), "run-1", True)
    assert patch == {"spec": {"unschedulable": True},
                     "metadata": {"labels": {EXCLUDE_LB_LABEL: "true"},
                                  "annotations": {CORDONED_BY_ANNOTATION: "run-1"}}}
    assert cordon_patch(node(), "run-1", False) == {
        "spec": {"unschedulable": True},
        "metadata": {"annotations": {CORDONED_BY_ANNOTATION: "run-1; set=unschedulable"}}}
    done = apply_merge_patch(node(), patch)
    assert cordon_patch(done, "run-2", True) is None          # D1: no-op when already set
    assert cordon_patch(node(unschedulable=True, labels={EXCLUDE_LB_LABEL: "true"}), "r", True) is None


def test_uncordon_patch_undoes_only_our_marks():
    ours = apply_merge_patch(node(), cordon_patch(node(), "run-1", True))
    patch = uncordon_patch(ours)
    restored = apply_merge_patch(ours, patch)
    assert restored["spec"].get("unschedulable") is None
    assert EXCLUDE_LB_LABEL not in restored["metadata"]["labels"]
    assert CORDONED_BY_ANNOTATION not in restored["metadata"]["annotations"]
    assert uncordon_patch(ours, run_id="other-run") is None
    # Cordoned and labelled by someone else: uncordon (kubectl parity) but keep their label.
    theirs = node(unschedulable=True, labels={EXCLUDE_LB_LABEL: "true"})
    assert uncordon_patch(theirs) == {"spec": {"unschedulable": None}}
    assert uncordon_patch(node()) is None


def test_C1_autoscaler_taint_refused():
    tainted = node(taints=[{"key": AUTOSCALER_TAINT, "value": "1", "effect": "NoSchedule"}])
    with pytest.raises(UpgradeError) as info:
        check_not_autoscaler_target(tainted)
    assert info.value.code == "ClusterAutoscalerActive" and "node-a" in info.value.msg
    check_not_autoscaler_target(node(taints=[{"key": "other", "effect": "NoSchedule"}]))


# ----------------------------------------------------------------------------------------------------------
# Cordon marks: undo only what this run changed (D1, U4)
# ----------------------------------------------------------------------------------------------------------

def test_cordon_mark_round_trips_and_reads_the_first_format():
    assert cordon_mark("run-1", ["unschedulable", "label"]) == "run-1"
    assert parse_cordon_mark("run-1") == ("run-1", frozenset(["unschedulable", "label"]))
    assert parse_cordon_mark(cordon_mark("run-1", ["label"])) == ("run-1", frozenset(["label"]))
    assert parse_cordon_mark(cordon_mark("a; set=b", ["unschedulable"])) == ("a; set=b", frozenset(["unschedulable"]))
    # a run id that merely looks like a mark stays whole
    assert parse_cordon_mark("x; set=other") == ("x; set=other", frozenset(["unschedulable", "label"]))


def test_D1_an_operators_cordon_survives_our_uncordon():
    operator = node(unschedulable=True)
    patch = cordon_patch(operator, "run-1", True)
    assert patch == {"metadata": {"labels": {EXCLUDE_LB_LABEL: "true"},
                                  "annotations": {CORDONED_BY_ANNOTATION: "run-1; set=label"}}}
    ours = apply_merge_patch(operator, patch)
    undo = uncordon_patch(ours, run_id="run-1")
    assert undo == {"metadata": {"annotations": {CORDONED_BY_ANNOTATION: None}, "labels": {EXCLUDE_LB_LABEL: None}}}
    restored = apply_merge_patch(ours, undo)
    assert restored["spec"]["unschedulable"] is True and EXCLUDE_LB_LABEL not in restored["metadata"]["labels"]


def test_U4_an_operators_label_survives_our_uncordon():
    operator = node(labels={EXCLUDE_LB_LABEL: "true"})
    ours = apply_merge_patch(operator, cordon_patch(operator, "run-1", True))
    assert ours["metadata"]["annotations"][CORDONED_BY_ANNOTATION] == "run-1; set=unschedulable"
    restored = apply_merge_patch(ours, uncordon_patch(ours, run_id="run-1"))
    assert not restored["spec"].get("unschedulable") and restored["metadata"]["labels"][EXCLUDE_LB_LABEL] == "true"
    # an explicit uncordon without a run id uncordons (kubectl parity) and still keeps their label
    assert uncordon_patch(ours) == {"spec": {"unschedulable": None},
                                    "metadata": {"annotations": {CORDONED_BY_ANNOTATION: None}}}


def test_a_mark_in_the_first_format_still_uncordons_everything():
    legacy = node(unschedulable=True, labels={EXCLUDE_LB_LABEL: "true"}, annotations={CORDONED_BY_ANNOTATION: "run-0"})
    assert uncordon_patch(legacy, run_id="run-0") == {
        "spec": {"unschedulable": None},
        "metadata": {"annotations": {CORDONED_BY_ANNOTATION: None}, "labels": {EXCLUDE_LB_LABEL: None}}}
    assert uncordon_patch(legacy, run_id="run-9") is None


def test_the_same_run_records_what_it_sets_later_and_leaves_another_runs_mark():
    labelled = apply_merge_patch(node(unschedulable=True), cordon_patch(node(unschedulable=True), "run-1", True))
    uncordoned = apply_merge_patch(labelled, {"spec": {"unschedulable": None}})   # kubectl uncordon in between
    patch = cordon_patch(uncordoned, "run-1", True)
    assert patch == {"spec": {"unschedulable": True}, "metadata": {"annotations": {CORDONED_BY_ANNOTATION: "run-1"}}}
    assert cordon_patch(uncordoned, "run-2", True) == {"spec": {"unschedulable": True}}


# ----------------------------------------------------------------------------------------------------------
# On the fake API
# ----------------------------------------------------------------------------------------------------------

def test_cordon_and_uncordon_are_idempotent():
    cluster = FakeCluster()
    first = cordon_nodes(cluster, ["node-a"], run_id="run-1")
    assert first.changed and first.nodes["node-a"].cordoned
    assert not cordon_nodes(cluster, ["node-a"], run_id="run-2").changed
    assert not uncordon_nodes(cluster, ["node-a"], run_id="run-2").changed     # another run's cordon
    undone = uncordon_nodes(cluster, ["node-a"], run_id="run-1")
    assert undone.changed and not undone.nodes["node-a"].cordoned
    labels = cluster.nodes["node-a"]["metadata"]["labels"]
    assert EXCLUDE_LB_LABEL not in labels
    assert not uncordon_nodes(cluster, ["node-a"]).changed
    assert cluster.event_reasons() == ["EksopsCordon", "EksopsUncordon"]


def test_C1_autoscaler_tainted_node_fails_before_anything_changes():
    nodes = [node("node-a"), node("node-b", taints=[{"key": AUTOSCALER_TAINT, "effect": "NoSchedule"}])]
    cluster = FakeCluster([make_pod("web-0")], nodes=nodes)
    with pytest.raises(UpgradeError) as info:
        run_drain(cluster, names=("node-a", "node-b"))
    assert info.value.code == "ClusterAutoscalerActive" and "node-b" in info.value.msg
    assert not cluster.verbs("patch") and not cluster.verbs("evict")
