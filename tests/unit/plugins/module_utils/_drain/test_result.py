# -*- coding: utf-8 -*-
# Copyright: Contributors to the eksops.nodegroup project
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""_drain/result.py (D16, U5): what a drain did, per node and in all, and the PodEvictionFailure it ends in."""

from __future__ import annotations

import pytest

from ansible_collections.eksops.nodegroup.plugins.module_utils._drain.result import DrainResult, NodeResult
from ansible_collections.eksops.nodegroup.plugins.module_utils.errors import UpgradeError


class Returning:
    """A workload whose pods come back to the cordoned node (returning_pods.Returning's face to the result)."""

    remedy = "remove its toleration of node.kubernetes.io/unschedulable"

    def describe(self):
        return "Deployment ns/web: its pods return to the cordoned node"


def test_a_node_result_sorts_what_it_reports():
    node = NodeResult("n1")
    node.evicted, node.deleted = ["ns/b", "ns/a"], ["ns/d", "ns/c"]
    node.skipped = [{"pod": "ns/z", "reason": "mirror"}, {"pod": "ns/y", "reason": "daemonset"}]
    node.pdb_wait_seconds = 12.345
    report = node.to_dict()
    assert (report["evicted"], report["deleted"]) == (["ns/a", "ns/b"], ["ns/c", "ns/d"])
    assert [entry["pod"] for entry in report["skipped"]] == ["ns/y", "ns/z"]
    assert report["pdb_wait_seconds"] == 12.3 and report["error"] is None and node.ok


@pytest.mark.parametrize("force, advice", [
    (False, "stopped evicting it, it would never leave (remove its toleration of node.kubernetes.io/unschedulable, "
            "or drain with force"),
    (True, "its pods were left on the node (force)"),
])
def test_a_failed_eviction_names_the_returning_workload_first_then_the_pods(force, advice):
    node = NodeResult("n1")
    entries = [{"pod": "ns/b", "reason": "429", "pdb": "web"}, {"pod": "ns/a", "reason": "timeout", "pdb": None}]
    node.fail_eviction(entries, [Returning()], force)
    assert not node.ok
    assert node.error.startswith("node n1 stays cordoned: Deployment ns/web: its pods return to the cordoned node; ")
    assert advice in node.error
    assert node.error.endswith("2 pod(s) could not be evicted: ns/a (timeout), ns/b (429; PodDisruptionBudget web)")


def test_a_drain_result_is_changed_when_a_node_changed_and_fails_with_the_failed_nodes():
    result = DrainResult(["n1", "n2", "n3"])
    assert not result.changed and result.error() is None
    result.raise_for_failure()
    result.nodes["n2"].changed = True
    result.nodes["n3"].fail_eviction([{"pod": "ns/a", "reason": "429", "pdb": "web"}], [], False)
    result.nodes["n1"].fail_eviction([{"pod": "ns/b", "reason": "429", "pdb": None}], [], False)
    assert result.changed and result.failed_nodes == ["n1", "n3"]
    with pytest.raises(UpgradeError) as raised:
        result.raise_for_failure()
    err = raised.value
    assert err.code == "PodEvictionFailure" and err.details["failed_nodes"] == ["n1", "n3"]
    assert err.msg.startswith("node n1 stays cordoned") and " | node n3 stays cordoned" in err.msg
    assert set(err.details["nodes"]) == {"n1", "n2", "n3"}


def test_the_diff_holds_only_the_nodes_with_a_before_or_after():
    result = DrainResult(["n1", "n2"])
    result.nodes["n1"].before, result.nodes["n1"].after = {"unschedulable": False}, {"unschedulable": True}
    assert result.diff() == dict(before={"n1": {"unschedulable": False}}, after={"n1": {"unschedulable": True}})
