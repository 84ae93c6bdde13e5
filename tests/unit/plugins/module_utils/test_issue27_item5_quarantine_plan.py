# -*- coding: utf-8 -*-
# Copyright: Contributors to the eksops.nodegroup project
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Issue 27 item 5, the decisions of undrainable_nodes quarantine (plugins/module_utils/plan/quarantine_book.py): which
failed drains quarantine their nodes, the bound max_quarantined_nodes, what is retried last (one more drain each),
what a rerun carries over, and the NodesQuarantined error naming every node, pod and PodDisruptionBudget (SPEC U5,
U8)."""

from __future__ import annotations

import pytest

from ansible_collections.eksops.nodegroup.plugins.module_utils.errors import CODES, UpgradeError
from ansible_collections.eksops.nodegroup.plugins.module_utils.plan.quarantine_book import (
    QUARANTINE_LABEL,
    Held,
    QuarantineBook,
    batches_without,
    check_quarantine_options,
    quarantinable,
    reason_annotation,
    with_earlier_evictions,
)

BILLING = dict(pod="payments/billing-1", reason="Cannot evict pod (drain_timeout=5 s)", pdb="payments/billing")


def held(instance_id, batch=1, blockers=(BILLING,), decrement=False):
    return Held(instance_id, "node-" + instance_id, decrement=decrement, blockers=tuple(blockers), batch=batch)


def test_issue27_item5_only_a_drain_that_timed_out_quarantines():
    assert quarantinable({"n1": "PodEvictionFailure"}, {"n1"})
    assert quarantinable({"n1": "PodEvictionFailure", "n2": "PodEvictionFailure"}, {"n1", "n2"})
    # A refusal before any eviction (a bare pod, do-not-disrupt: no code) and a load balancer's hold fail the run.
    assert not quarantinable({"n1": None}, set())
    assert not quarantinable({"n1": "PodEvictionFailure", "n2": "LoadBalancerDeregistrationTimeout"}, {"n1"})
    assert not quarantinable({}, set())


def test_issue27_item5_a_pod_eviction_failure_before_the_timeout_does_not_quarantine():
    """Issue 27 item 5 (SPEC D10, Z3): a pod refused when it arrived during the drain, or pods returning to the
    node (the drain's fail-fast), fail with PodEvictionFailure too, before drain_timeout ran out: no retry would
    drain the node, the run fails as with undrainable_nodes fail."""
    assert not quarantinable({"n1": "PodEvictionFailure"}, set())
    assert not quarantinable({"n1": "PodEvictionFailure", "n2": "PodEvictionFailure"}, {"n1"})


def test_issue27_item5_options_are_refused_naming_the_parameter():
    check_quarantine_options("quarantine", 1)
    for args, parameter in ((("cordon", 1), "undrainable_nodes"), (("quarantine", 0), "max_quarantined_nodes")):
        with pytest.raises(UpgradeError) as raised:
            check_quarantine_options(*args)
        assert (raised.value.code, raised.value.details["parameter"]) == ("InvalidParameter", parameter)


def test_issue27_item5_one_more_than_allowed_exceeds_the_bound():
    book = QuarantineBook(limit=2)
    assert not book.hold([held("i-1")])
    assert not book.hold([held("i-2", batch=2)])
    assert book.hold([held("i-3", batch=3)])
    error = book.error(exceeded=True)
    assert error.code == "NodesQuarantined" and error.code in CODES
    assert "more than max_quarantined_nodes 2" in error.msg and "stopped before its next batch" in error.msg
    assert error.details["failed_nodes"] == ["node-i-1", "node-i-2", "node-i-3"]
    assert error.details["max_quarantined_nodes_exceeded"] is True


def test_issue27_item5_the_held_nodes_are_retried_last_once_each_in_the_order_held():
    book = QuarantineBook(limit=3)
    book.hold([held("i-2"), held("i-1", batch=2)])
    assert book.excluded == {"i-1", "i-2"}
    first = book.next_retry(1)
    assert [h.instance_id for h in first] == ["i-2"]
    assert book.excluded == {"i-1"}
    # i-2 held again by its retry: retried, never retried again, and it exceeds nothing.
    assert not book.hold([held("i-2", blockers=[dict(BILLING, pod="payments/billing-2")])])
    second = book.next_retry(5)
    assert [h.instance_id for h in second] == ["i-1"]
    book.release(["i-1"])
    assert book.next_retry(5) == []
    assert book.excluded == {"i-2"}
    assert [(e["node"], e["retried"]) for e in book.entries()] == [("node-i-2", True)]


def test_issue27_item5_a_rerun_carries_the_labelled_nodes_over_and_they_never_exceed_the_bound_alone():
    book = QuarantineBook.carried_over(1, {"i-9": "node-9", "i-8": "node-8"})
    assert book.excluded == {"i-8", "i-9"}
    assert [h.batch for h in book.held.values()] == [None, None]
    # A node newly held on top of two carried over exceeds the bound of 1.
    assert book.hold([held("i-1")])


def test_issue27_item5_the_error_names_every_node_pod_and_budget():
    book = QuarantineBook(limit=5)
    assert book.error() is None
    book.hold([held("i-1"), held("i-2", blockers=[dict(pod="default/solo", reason="not removed", pdb=None)])])
    error = book.error()
    assert "node node-i-1 (i-1): payments/billing-1 (PodDisruptionBudget payments/billing)" in error.msg
    assert "node node-i-2 (i-2): default/solo" in error.msg
    assert QUARANTINE_LABEL in error.msg and "rerun" in error.msg
    assert error.details["pod_disruption_budgets"] == ["payments/billing"]
    assert error.details["quarantined"][0]["pods"] == [BILLING]
    assert error.details["quarantined"][0]["pod_disruption_budgets"] == ["payments/billing"]


def test_issue27_item5_the_reason_annotation_is_short():
    many = [dict(pod="default/p%04d" % n, reason="x", pdb="default/b") for n in range(200)]
    assert len(reason_annotation(held("i-1", blockers=many))) == 1000
    assert reason_annotation(held("i-1")).startswith("drain timed out in batch 1; held by payments/billing-1")


def test_issue27_item5_a_budget_is_named_in_its_pods_namespace():
    # The drain engine names a budget as the API does (name only, several joined by commas).
    entry = held("i-1", blockers=[dict(pod="default/billing-1", reason="x", pdb="billing,all")])
    assert entry.to_dict()["pod_disruption_budgets"] == ["default/all", "default/billing"]
    assert "default/billing-1 (PodDisruptionBudget default/billing, default/all)" in reason_annotation(entry)


def test_issue27_item5_what_a_node_s_drains_evicted_before_they_timed_out_is_kept_until_it_goes():
    book = QuarantineBook(limit=1)
    book.hold([Held("i-1", "node-i-1", blockers=(BILLING,), batch=1, evicted=("default/web-1",))])
    book.next_retry(1)
    book.hold([Held("i-1", "node-i-1", blockers=(BILLING,), batch=3, evicted=("default/web-2",))])
    assert book.entries()[0]["evicted"] == ["default/web-1", "default/web-2"] and book.entries()[0]["batch"] == 1
    [released] = book.release(["i-1", "i-9"])
    record = with_earlier_evictions(dict(evicted=["payments/billing-1"], failed=[]), released)
    assert record["evicted"] == ["default/web-1", "default/web-2", "payments/billing-1"]
    assert book.held == {}


def test_issue27_item5_review_2_ordered_plan_leaves_held_nodes_out_as_the_quarantine_does(monkeypatch):
    """Issue 27 item 5 review 2 (no duplicated logic): the plan's order (health_gate.ordered_plan) leaves the nodes
    an earlier run quarantined out of the batches with the quarantine's own rule (quarantine_book.batches_without,
    which QuarantineBook.without_held is), so the canary and the batch numbers are those of the batches drained."""
    from ansible_collections.eksops.nodegroup.plugins.module_utils.phases.replace import health_gate

    calls = []

    def spy(batches, excluded):
        calls.append((batches, set(excluded)))
        return batches_without(batches, excluded)

    monkeypatch.setattr(health_gate, "batches_without", spy)
    plan = dict(strategy="rolling", batch_size=1, batches=[["i-1"], ["i-2"], ["i-3"]])
    ordered = health_gate.ordered_plan(plan, {"i-1": "a", "i-2": "a", "i-3": "b"}, True, "random", {"i-1": "node-i-1"})
    assert calls == [([["i-1"], ["i-2"], ["i-3"]], {"i-1"})]
    assert ordered["batches"] == [["i-2"], ["i-3"]] and ordered["canary_batches"] == 2
    book = QuarantineBook.carried_over(1, {"i-1": "node-i-1"})
    assert book.without_held(plan["batches"]) == batches_without(plan["batches"], {"i-1"}) == [["i-2"], ["i-3"]]
