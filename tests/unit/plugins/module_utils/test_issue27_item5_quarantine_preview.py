# -*- coding: utf-8 -*-
# Copyright: Contributors to the eksops.nodegroup project
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Issue 27 item 5, a dry run with undrainable_nodes quarantine (plugins/module_utils/plan/quarantine_preview.py):
the plan shows what the real run would do - the nodes an earlier run quarantined left out of the batches and
retried last, the nodes a PodDisruptionBudget that never allows an eviction would hold quarantined after
drain_timeout, those refused before any eviction failing the run, and the batch where max_quarantined_nodes would
be exceeded (issue 10 item 9: check mode shows the real plan; SPEC Z3, D10, U5)."""

from __future__ import annotations

from ansible_collections.eksops.nodegroup.plugins.module_utils.plan.quarantine_preview import quarantine_preview

LABEL = {"eksops.nodegroup/quarantined": "true"}


def instances(*labelled):
    return [dict(instance_id="i-%d" % n, node_name="node-%d" % n, labels=LABEL if n in labelled else {})
            for n in range(1, 6)]


def finding(check, kind, name, *nodes):
    return dict(check=check, kind=kind, namespace="default", name=name, nodes=["node-%d" % n for n in nodes])


BATCHES = [["i-1", "i-2"], ["i-3"], ["i-4", "i-5"]]
BILLING = finding("blocking_pdb", "PodDisruptionBudget", "billing", 3)


def preview(findings=(), labelled=(), limit=1, force=False):
    return quarantine_preview(BATCHES, instances(*labelled), list(findings), limit, force, 900)


def test_issue27_item5_a_dry_run_leaves_the_nodes_an_earlier_run_quarantined_out_of_the_batches():
    shown = preview(labelled=[2, 3], limit=2)
    assert shown["batches"] == [["i-1"], ["i-4", "i-5"]]
    assert shown["carried"] == [dict(instance_id="i-2", node="node-2"), dict(instance_id="i-3", node="node-3")]
    assert shown["held_at_once"] == 2 and shown["exceeded_batch"] is None
    assert shown["lines"][0] == ("quarantine: held by an earlier run (labelled eksops.nodegroup/quarantined=true), "
                                 "left out of the batches above and drained once more after every other node: "
                                 "node-2 (i-2), node-3 (i-3).")
    assert shown["lines"][-1] == "quarantine: at most 2 node(s) held at once, within max_quarantined_nodes 2."


def test_issue27_item5_a_dry_run_names_the_nodes_a_budget_would_hold_quarantined_after_drain_timeout():
    shown = preview([BILLING, finding("single_replica", "Deployment", "billing", 3)])
    assert shown["batches"] == BATCHES
    assert shown["held"] == [dict(instance_id="i-3", node="node-3", batch=2,
                                  by=["PodDisruptionBudget default/billing"])]
    assert (shown["refused"], shown["exceeded_batch"], shown["failed_batch"]) == ([], None, None)
    assert ("on node-3 (i-3; batch 2; PodDisruptionBudget default/billing): each drain would run out of "
            "drain_timeout (900 s) and its node be quarantined") in shown["lines"][0]
    assert "instead of failing the run" in shown["lines"][0] and "NodesQuarantined" in shown["lines"][0]


def test_issue27_item5_a_dry_run_says_where_max_quarantined_nodes_would_stop_the_run():
    """An earlier run's node counts against the bound (QuarantineBook): the first node held in this run exceeds
    max_quarantined_nodes 1, and the run stops in its batch; a later batch's budget is never reached."""
    shown = preview([BILLING, finding("blocking_pdb", "PodDisruptionBudget", "ledger", 5)], labelled=[1])
    assert shown["batches"] == [["i-2"], ["i-3"], ["i-4", "i-5"]]
    assert shown["exceeded_batch"] == 2 and [h["node"] for h in shown["held"]] == ["node-3"]
    assert shown["lines"][-1] == ("quarantine: batch 2 would hold one node more than max_quarantined_nodes 1 (node-3 "
                                  "(i-3) held there): the run would stop with NodesQuarantined once that batch's "
                                  "other nodes are replaced.")
    assert preview([BILLING], labelled=[1], limit=2)["exceeded_batch"] is None


def test_issue27_item5_a_dry_run_says_quarantine_does_not_wait_out_a_refused_pod():
    """D10, issue 27 item 6: a pod that asks not to be disrupted is refused before any eviction: its drain fails
    the run, quarantine or not; the budget's node after it is never reached."""
    shown = preview([finding("do_not_disrupt", "Pod", "batch-job-1", 1), BILLING])
    assert shown["failed_batch"] == 1 and shown["held"] == []
    assert shown["refused"] == [dict(instance_id="i-1", node="node-1", batch=1, by=["Pod default/batch-job-1"])]
    assert shown["lines"] == ["quarantine does not wait out pods refused before any eviction, on node-1 (i-1; batch 1; "
                              "Pod default/batch-job-1): that drain would fail the run with PodEvictionFailure in "
                              "batch 1 unless force."]


def test_issue27_item5_with_force_a_dry_run_expects_no_node_quarantined():
    shown = preview([BILLING, finding("unmanaged_pod", "Pod", "debug", 4)], labelled=[5], force=True)
    assert (shown["held"], shown["refused"], shown["failed_batch"]) == ([], [], None)
    assert shown["batches"] == [["i-1", "i-2"], ["i-3"], ["i-4"]]
    assert "no other node is expected to be quarantined" in shown["lines"][1]


def test_issue27_item5_a_dry_run_with_nothing_to_quarantine_says_so():
    assert preview([finding("no_pdb", "Deployment", "web", 1, 2)])["lines"] == [
        "quarantine: no node held by an earlier run, and the preflight finds none a drain would time out on."]


def test_issue27_item5_review_4_when_the_run_draws_its_own_batches_the_preview_says_about_and_names_the_nodes():
    """Issue 27 item 5 review 4: under the schedule once the live planner draws each batch without the quarantined
    nodes (the plan drew them with them), a surge step chooses its old nodes where its launch landed, and a canary
    or batch_order zone reorders the batches: the batch numbers of the batches shown are then the run's only
    about, and the lines say so and name the nodes; the plan's own batches (schedule eks) keep their numbers."""
    findings = [BILLING, finding("blocking_pdb", "PodDisruptionBudget", "ledger", 5)]
    exact = quarantine_preview(BATCHES, instances(1), findings, 1, False, 900)
    drawn = quarantine_preview(BATCHES, instances(1), findings, 1, False, 900, approximate=True)
    assert (drawn["exceeded_batch"], drawn["held"]) == (exact["exceeded_batch"], exact["held"])
    assert "on node-3 (i-3; about batch 2; PodDisruptionBudget default/billing)" in drawn["lines"][1]
    assert drawn["lines"][-1] == ("quarantine: about batch 2 would hold one node more than max_quarantined_nodes 1 "
                                  "(node-3 (i-3) held there): the run would stop with NodesQuarantined once that "
                                  "batch's other nodes are replaced (the run draws its own batches: it may reach "
                                  "these nodes in another one).")
    assert "about" not in " ".join(exact["lines"])
    refused = quarantine_preview(BATCHES, instances(), [finding("do_not_disrupt", "Pod", "job", 1)], 1, False, 900,
                                 approximate=True)
    assert refused["lines"][0].endswith("PodEvictionFailure in about batch 1 unless force.")
