# -*- coding: utf-8 -*-
# Copyright: Contributors to the eksops.nodegroup project
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Which pods a drain removes, waits for, leaves or refuses (_drain/filters.py, SPEC D3-D10): one table per rule."""

from __future__ import annotations

import pytest

from ansible_collections.eksops.nodegroup.plugins.module_utils._drain import filters
from ansible_collections.eksops.nodegroup.plugins.module_utils._drain.filters import (
    REFUSE,
    REMOVE,
    SKIP,
    Verdict,
    WAIT,
    WARN,
    decide_pod,
    plan_node,
    refusal_message,
)
from ansible_collections.eksops.nodegroup.plugins.module_utils._drain.options import DrainOptions

from ...fakes import NOW, make_pod


def opts(**kwargs):
    kwargs.setdefault("run_id", "run-1")
    return DrainOptions(**kwargs)


def exists(namespace, name):
    return True


def missing(namespace, name):
    return False


@pytest.mark.parametrize("deleting_for, skip_wait, expected", [
    (None, 0, REMOVE),
    (5, 0, WAIT),            # D4: terminating pods are waited for ...
    (5, 10, WAIT),           # ... unless older than skip_wait_for_delete_timeout
    (30, 10, SKIP),
])
def test_D4_terminating_pods(deleting_for, skip_wait, expected):
    decision = decide_pod(make_pod("p", deleting_for=deleting_for), opts(skip_wait_for_delete_timeout=skip_wait),
                          exists, NOW)
    assert decision.action == expected


@pytest.mark.parametrize("ignore, ds_exists, force, phase, expected, reason_part", [
    (True, True, False, "Running", SKIP, "ignore_daemonsets"),
    (False, True, False, "Running", REFUSE, "set ignore_daemonsets"),
    (True, False, False, "Running", REFUSE, "is gone"),
    (True, False, True, "Running", REMOVE, None),
    (False, True, False, "Succeeded", REMOVE, None),   # D9: finished pods pass
])
def test_D5_daemonset_pods(ignore, ds_exists, force, phase, expected, reason_part):
    decision = decide_pod(make_pod("ds", owner="DaemonSet", phase=phase),
                          opts(ignore_daemonsets=ignore, force=force), exists if ds_exists else missing, NOW)
    assert decision.action == expected
    if reason_part:
        assert reason_part in decision.reason
    if expected == REMOVE and not ds_exists:
        assert any("DaemonSet" in w for w in decision.warnings)


def test_D6_mirror_pods_are_skipped_silently():
    decision = decide_pod(make_pod("static", owner="Node", mirror=True), opts(), exists, NOW)
    assert decision.action == SKIP and decision.reason == "mirror pod" and decision.warnings == []


@pytest.mark.parametrize("empty_dir, allow, phase, expected, warned", [
    (True, True, "Running", REMOVE, True),
    (True, False, "Running", REFUSE, False),
    (True, False, "Failed", REMOVE, False),   # D9
    (False, False, "Running", REMOVE, False),  # hostPath is not local storage
])
def test_D7_emptydir_pods(empty_dir, allow, phase, expected, warned):
    decision = decide_pod(make_pod("cache", empty_dir=empty_dir, phase=phase), opts(delete_emptydir_data=allow),
                          exists, NOW)
    assert decision.action == expected
    assert bool(decision.warnings) == warned


@pytest.mark.parametrize("force, phase, expected", [
    (False, "Running", REFUSE),
    (True, "Running", REMOVE),
    (False, "Succeeded", REMOVE),   # D9
    (False, "Failed", REMOVE),
])
def test_D8_pods_without_controller(force, phase, expected):
    decision = decide_pod(make_pod("bare", owner=None, phase=phase), opts(force=force), exists, NOW)
    assert decision.action == expected
    if expected == REFUSE:
        assert "use force" in decision.reason


def test_D3_filter_order_first_refusal_decides():
    # A DaemonSet pod that is also a mirror pod with emptyDir: the DaemonSet filter comes first.
    pod = make_pod("x", owner="DaemonSet", mirror=True, empty_dir=True)
    assert decide_pod(pod, opts(ignore_daemonsets=False, delete_emptydir_data=False), exists, NOW).reason == \
        "DaemonSet-managed pod (set ignore_daemonsets)"
    # Terminating long enough beats every later filter, even a refusal.
    pod = make_pod("y", owner=None, deleting_for=100)
    assert decide_pod(pod, opts(skip_wait_for_delete_timeout=10), exists, NOW).action == SKIP
    # Warnings from passing filters accumulate until a later filter refuses.
    pod = make_pod("z", owner=None, empty_dir=True)
    decision = decide_pod(pod, opts(force=False), exists, NOW)
    assert decision.action == REFUSE and decision.warnings == ["pod with emptyDir data; the data is deleted"]


def test_D3_each_filter_in_order():
    assert [f.__name__ for f in filters.POD_FILTERS] == [
        "deleting_filter", "daemonset_filter", "mirror_filter", "disruption_filter", "local_storage_filter",
        "unreplicated_filter"]


def annotated(name, annotations, **kwargs):
    pod = make_pod(name, **kwargs)
    pod["metadata"]["annotations"] = annotations
    return pod


@pytest.mark.parametrize("annotations, force, expected", [
    ({"karpenter.sh/do-not-disrupt": "true"}, False, (REFUSE, "pod annotated karpenter.sh/do-not-disrupt=true, "
                                                              "which asks not to disrupt it (use force)")),
    ({"cluster-autoscaler.kubernetes.io/safe-to-evict": "false"}, False,
     (REFUSE, "pod annotated cluster-autoscaler.kubernetes.io/safe-to-evict=false, which asks not to disrupt it "
              "(use force)")),
    ({"karpenter.sh/do-not-disrupt": "true"}, True, (REMOVE, None)),
    ({"cluster-autoscaler.kubernetes.io/safe-to-evict": "true"}, False, (REMOVE, None)),
    ({"karpenter.sh/do-not-disrupt": "false"}, False, (REMOVE, None)),
])
def test_issue27_item6_a_pod_that_asks_not_to_be_disrupted_is_evicted_only_with_force(annotations, force, expected):
    decision = decide_pod(annotated("web-1", annotations), opts(force=force), exists, NOW)
    assert (decision.action, decision.reason) == expected
    if force and expected[0] == REMOVE:
        assert decision.warnings == ["pod annotated karpenter.sh/do-not-disrupt=true; evicted all the same (force)"]


def test_issue27_item6_on_a_node_that_asks_not_to_be_disrupted_every_pod_to_move_refuses_without_force():
    node = {"metadata": {"name": "node-a", "annotations": {"karpenter.sh/do-not-disrupt": "true"}}}
    pods = [make_pod("web-1"), make_pod("agent", owner="DaemonSet"), make_pod("done", phase="Succeeded")]
    refused = plan_node(pods, opts(ignore_daemonsets=True), exists, NOW, (filters.node_disruption_filter(node),))
    assert refused.refused == [dict(pod="default/web-1", pdb=None, reason="on a node annotated "
                                    "karpenter.sh/do-not-disrupt=true, which asks not to disrupt it (use force)")]
    forced = plan_node(pods, opts(ignore_daemonsets=True, force=True), exists, NOW,
                       (filters.node_disruption_filter(node),))
    assert not forced.blocked and [p["metadata"]["name"] for p in forced.remove] == ["web-1", "done"]
    assert forced.warnings == ["default/web-1: on a node annotated karpenter.sh/do-not-disrupt=true; evicted all "
                               "the same (force)"]
    assert filters.node_disruption_filter({"metadata": {"name": "node-b"}}) is None


def test_issue27_item6_the_drain_leaves_an_annotated_daemonset_pod_as_any_daemonset_pod():
    pod = annotated("agent", {"karpenter.sh/do-not-disrupt": "true"}, owner="DaemonSet")
    assert decide_pod(pod, opts(ignore_daemonsets=True), exists, NOW).action == SKIP


def test_D10_one_refusal_blocks_the_node_and_lists_all_refusals_by_reason():
    pods = [make_pod("web-1"), make_pod("bare-1", owner=None), make_pod("bare-2", owner=None),
            make_pod("cache-1", empty_dir=True), make_pod("agent", owner="DaemonSet")]
    plan = plan_node(pods, opts(delete_emptydir_data=False), exists, NOW)
    assert plan.blocked
    assert [r["pod"] for r in plan.refused] == ["default/bare-1", "default/bare-2", "default/cache-1"]
    assert plan.skipped == [{"pod": "default/agent", "reason": "DaemonSet-managed pod (ignore_daemonsets)"}]
    message = refusal_message("node-a", plan.refused)
    assert "nothing was evicted" in message
    assert "pod not managed by a controller (use force): default/bare-1, default/bare-2" in message
    assert "pod with emptyDir data (set delete_emptydir_data): default/cache-1" in message


def test_D9_finished_pods_pass_all_filters():
    pods = [make_pod("done", owner=None, phase="Succeeded", empty_dir=True),
            make_pod("crashed", owner=None, phase="Failed")]
    plan = plan_node(pods, opts(delete_emptydir_data=False), exists, NOW)
    assert not plan.blocked and len(plan.remove) == 2


def test_verdict_equality():
    assert Verdict(WARN, "x") == Verdict(WARN, "x") and Verdict(WARN, "x") != Verdict(SKIP, "x")
