# -*- coding: utf-8 -*-
# Copyright: Contributors to the eksops.nodegroup project
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Issue 27 item 1: the health gate's verdict (plan/workload_health.py), the canary's batches (plan/batch_order.py), the
gate's reads and wait (phases/replace/health_gate.py) and the loop's soak and gate after a batch (loop.py), with
fake steps and a fake clock. The verdict reads a Deployment as `kubectl rollout status` does (kubernetes/kubectl
pkg/polymorphichelpers/rollout_status.go), a StatefulSet by its ready replicas and revisions."""

from __future__ import annotations

import pytest

from ansible_collections.eksops.nodegroup.plugins.module_utils.errors import HEALTH_GATE_FAILED, INVALID_PARAMETER, UpgradeError
from ansible_collections.eksops.nodegroup.plugins.module_utils.phases.replace import health_gate as gates
from ansible_collections.eksops.nodegroup.plugins.module_utils.phases.replace.loop import (
    Batch,
    Drained,
    ReplaceFailed,
    ReplaceLoop,
    ReplaceState,
    canary_first,
    planned_batches,
)
from ansible_collections.eksops.nodegroup.plugins.module_utils.plan.batch_order import canary_batches
from ansible_collections.eksops.nodegroup.plugins.module_utils.report import timeline
from ansible_collections.eksops.nodegroup.plugins.module_utils.plan.workload_health import (
    deployment_problems,
    pending_pods,
    statefulset_problems,
    verdict,
)

from ..fakes import FakeClock, FakeCluster, FakeResponse, make_pod, run_drain


def deployment(name="web", replicas=3, available=3, updated=None, total=None, generation=2, observed=2, **extra):
    status = dict(observedGeneration=observed, replicas=replicas if total is None else total,
                  updatedReplicas=replicas if updated is None else updated, availableReplicas=available, **extra)
    return dict(metadata=dict(name=name, namespace="default", generation=generation),
                spec=dict(replicas=replicas), status=status)


def statefulset(name="db", replicas=3, ready=3, current="db-1", update="db-1", strategy=None):
    return dict(metadata=dict(name=name, namespace="default", generation=1),
                spec=dict(replicas=replicas, updateStrategy=strategy or dict(type="RollingUpdate")),
                status=dict(observedGeneration=1, readyReplicas=ready, currentRevision=current, updateRevision=update))


def pod(name, phase="Running", owner=("ReplicaSet", "web-5d8f7"), pod_hash="5d8f7", message=None, terminating=False):
    metadata = dict(name=name, namespace="default", labels={"pod-template-hash": pod_hash} if pod_hash else {},
                    ownerReferences=[dict(kind=owner[0], name=owner[1], controller=True)])
    if terminating:
        metadata["deletionTimestamp"] = "2026-01-01T00:00:00Z"
    conditions = [dict(type="PodScheduled", status="False", reason="Unschedulable", message=message)] if message else []
    return dict(metadata=metadata, status=dict(phase=phase, conditions=conditions))


# -- the verdict ---------------------------------------------------------------------------------------------

def test_issue27_item1_a_deployment_back_to_its_replicas_is_healthy():
    assert deployment_problems(deployment()) == []


@pytest.mark.parametrize("changes, problem", [
    (dict(available=2), "available 2/3"),
    (dict(observed=1), "its spec update is not observed yet"),
    (dict(updated=2, available=2), "2 of 3 new replicas updated"),
    (dict(total=4), "1 old replica(s) pending termination"),
    (dict(conditions=[dict(type="Progressing", reason="ProgressDeadlineExceeded")]), "it exceeded its progress deadline"),
])
def test_issue27_item1_a_deployment_not_back_says_why_as_rollout_status_would(changes, problem):
    assert problem in deployment_problems(deployment(**changes))


def test_issue27_item1_a_statefulset_is_judged_by_ready_replicas_and_revision():
    assert statefulset_problems(statefulset()) == []
    assert statefulset_problems(statefulset(ready=2)) == ["ready 2/3"]
    assert statefulset_problems(statefulset(update="db-2")) == ["rolling update to revision db-2 in progress"]
    # OnDelete: the revisions move only when a person deletes pods; its ready replicas still count.
    assert statefulset_problems(statefulset(update="db-2", strategy=dict(type="OnDelete"))) == []


def test_issue27_item1_pending_pods_are_named_with_the_schedulers_reason_and_terminating_ones_are_not():
    pods = [pod("web-5d8f7-a", "Pending", message="0/4 nodes are available"), pod("web-5d8f7-b"),
            pod("web-5d8f7-c", "Pending", terminating=True), pod("web-5d8f7-d", "Pending")]
    assert pending_pods(pods) == ["default/web-5d8f7-a (0/4 nodes are available)",
                                  "default/web-5d8f7-d (not started yet)"]


def test_issue27_item1_the_verdict_judges_each_workload_by_its_owner_and_its_pods():
    refs = ["Deployment default/web", "StatefulSet default/db", "Job default/batch", "Deployment default/gone"]
    owners = {"Deployment default/web": deployment(available=2), "StatefulSet default/db": statefulset()}
    pods = {"Deployment default/web": [pod("web-5d8f7-a", "Pending", message="0/4 nodes are available")],
            "Job default/batch": [pod("batch-x", owner=("Job", "batch"), pod_hash=None)]}
    verdicts = dict((health.ref, health) for health in verdict(refs, owners, pods))
    assert not verdicts["Deployment default/web"].healthy
    assert verdicts["Deployment default/web"].describe() == (
        "Deployment default/web (available 2/3; pending: default/web-5d8f7-a (0/4 nodes are available))")
    assert verdicts["StatefulSet default/db"].healthy and verdicts["Job default/batch"].healthy
    # Deleted meanwhile: nothing is left to come back.
    assert verdicts["Deployment default/gone"].healthy


# -- the canary ----------------------------------------------------------------------------------------------

def test_issue27_item1_the_canary_is_the_plans_first_node_in_each_zone_then_the_rest_in_the_plans_order():
    zone = {"i-1": "a", "i-2": "a", "i-3": "b", "i-4": "c", "i-5": "b", "i-6": "c"}
    assert canary_batches([["i-2", "i-1"], ["i-3", "i-5"], ["i-6", "i-4"]], zone, 3) == (
        [["i-2", "i-3", "i-6"]], [["i-1"], ["i-5"], ["i-4"]])
    # max_unavailable 1: the canary is one node per zone all the same, never more than a batch at a time.
    assert canary_batches([["i-1"], ["i-2"], ["i-3"], ["i-4"]], zone, 1) == (
        [["i-1"], ["i-3"], ["i-4"]], [["i-2"]])


def test_issue27_item1_the_surge_canary_is_the_first_step_and_the_rolling_one_reorders_the_plan():
    rolling = dict(strategy="rolling", batch_size=2, batches=[["i-1", "i-2"], ["i-3"]])
    planned = gates.ordered_plan(rolling, {"i-1": "a", "i-2": "a", "i-3": "b"}, True, "random")
    assert (planned["batches"], planned["canary_batches"], planned["zone_ends"]) == ([["i-1", "i-3"], ["i-2"]], 1, [])
    surge = gates.ordered_plan(dict(strategy="surge", steps=[dict(launch=1)] * 3), {}, True, "random")
    assert surge["canary_batches"] == 1
    assert gates.ordered_plan(rolling, {}, False, "random") == rolling


def test_issue27_item1_the_gate_options_are_checked_naming_the_parameter():
    params = dict(batch_soak_seconds=0, canary_soak_seconds=0, health_gate_timeout=600, canary=False, batches=None,
                  steps=None, batch_order="random", max_surge=None, schedule="once")
    gates.validate_gates(params)
    for name, value in (("batch_soak_seconds", -1), ("canary_soak_seconds", -5), ("health_gate_timeout", 0)):
        with pytest.raises(UpgradeError) as err:
            gates.validate_gates(dict(params, **{name: value}))
        assert (err.value.code, err.value.details["parameter"]) == (INVALID_PARAMETER, name)
    with pytest.raises(UpgradeError) as err:
        gates.validate_gates(dict(params, canary=True, batches=[["i-1"]]))
    assert err.value.details["parameter"] == "canary"


# -- the gate's reads and wait -------------------------------------------------------------------------------

class Lists:
    """The list calls the gate makes, answering from ``answers`` (a list per call of the kind, the last repeated)."""

    def __init__(self, pods, deployments=(), statefulsets=()):
        self.answers = dict(pods=list(pods), deployments=list(deployments), statefulsets=list(statefulsets))
        self.calls = []

    def _answer(self, kind, namespace):
        self.calls.append((kind, namespace))
        answers = self.answers[kind]
        items = answers.pop(0) if len(answers) > 1 else answers[0]
        return FakeResponse(dict(items=items, metadata=dict(resourceVersion="1")))

    def list_namespaced_pod(self, namespace, **_kwargs):
        return self._answer("pods", namespace)

    def list_namespaced_deployment(self, namespace, **_kwargs):
        return self._answer("deployments", namespace)

    def list_namespaced_stateful_set(self, namespace, **_kwargs):
        return self._answer("statefulsets", namespace)


def test_issue27_item1_the_gate_waits_until_the_workloads_are_back_one_list_per_kind_per_namespace():
    back = deployment(available=3)
    lists = Lists([[pod("web-5d8f7-a", "Pending")], []], deployments=[[deployment(available=2)], [back]])
    clock = FakeClock()
    gate = gates.HealthGate(lists, lists, batch_soak=30, timeout=60, clock=clock)
    assert all(h.healthy for h in gate.wait("batch 1/2", ["Deployment default/web"]))
    assert lists.calls == [("pods", "default"), ("deployments", "default")] * 2
    assert clock.sleeps == [1.0]


def test_issue27_item1_a_workload_not_back_by_the_timeout_fails_the_gate_naming_it_and_why():
    lists = Lists([[pod("web-5d8f7-a", "Pending", message="0/4 nodes are available")]],
                  deployments=[[deployment(available=2)]])
    gate = gates.HealthGate(lists, lists, batch_soak=30, timeout=20, clock=FakeClock())
    with pytest.raises(UpgradeError) as err:
        gate.wait("batch 2/3", ["Deployment default/web"])
    assert err.value.code == HEALTH_GATE_FAILED == "HealthGateFailed"
    assert err.value.details["workloads"] == ["Deployment default/web"]
    assert "batch 2/3" in err.value.msg and "health_gate_timeout 20 s" in err.value.msg
    assert "Deployment default/web (available 2/3; pending: default/web-5d8f7-a (0/4 nodes are available))" in err.value.msg


def batches(count, order):
    return [Batch(["i-%d" % n]).ordered(n, order) for n in range(1, count + 1)]


def test_issue27_item1_which_batches_soak_and_gate():
    assert [gates.HealthGate(None, None, 30, 60).soak_for(b) for b in batches(2, {})] == [30, 30]
    canary = gates.HealthGate(None, None, 0, 60, canary_soak=120)
    placed = batches(3, dict(canary_batches=2))
    assert [canary.soak_for(b) for b in placed] == [None, 120, None]
    assert [b.canary for b in placed] == [True, True, False]


def test_issue27_item1_item5_a_retry_of_quarantined_nodes_is_gated_whenever_a_gate_is_asked():
    """Issue 27 items 1 and 5: a retry comes after the plan, outside its canary and zone ends; its drain moved pods
    too, so any gate asked (here the canary's, batch_soak_seconds 0) gates it."""
    retry = Batch(["i-9"]).ordered(7, dict(canary_batches=2, zone_ends=[4, 6]))
    assert gates.HealthGate(None, None, 0, 60, canary_soak=120).soak_for(retry) is None
    retry.retry = True
    assert gates.HealthGate(None, None, 0, 60, canary_soak=120).soak_for(retry) == 0


def test_issue27_item1_item5_a_carried_over_node_leaves_the_plan_before_its_order_is_decided():
    """Issue 27 items 1, 5 and 7 (SPEC U5): with zone order and batch size 1 and node a2 held by an earlier run, the
    zone ends are numbered among the batches the run drains (a1 | b1 b2 | c1 c2 -> 1, 3, 5), and a held node is
    never a zone's canary (b2 stands in for b1)."""
    zone = {"a1": "a", "a2": "a", "b1": "b", "b2": "b", "c1": "c", "c2": "c"}
    plan = dict(strategy="rolling", batch_size=1, batches=[[i] for i in sorted(zone)])
    zoned = gates.ordered_plan(plan, zone, False, "zone", held={"a2"})
    assert (zoned["batches"], zoned["zone_ends"]) == ([["a1"], ["b1"], ["b2"], ["c1"], ["c2"]], [1, 3, 5])
    canary = gates.ordered_plan(plan, zone, True, "random", held={"b1"})
    assert (canary["batches"][:3], canary["canary_batches"]) == ([["a1"], ["b2"], ["c1"]], 3)
    source = planned_batches(zoned["batches"], order=zoned)
    state, gated = ReplaceState(), []
    for number in range(1, 6):
        gated.append(gates.HealthGate(None, None, 0, 60).soak_for(source(state)) is not None)
        state.batches.append(dict(batch=number))
    assert gated == [True, False, True, False, True]


# -- the loop's soak and gate --------------------------------------------------------------------------------

class Handle:
    def __init__(self, batch):
        self.batch = batch
        self.never_joined, self.availability_zones, self.group_per_az = [], {}, {}
        self.replacements, self.retained_instances = [], []


class GatedSteps:
    """Fake steps whose drain moves the Deployment of each batch's first instance; the gate fails on ``bad``."""

    def __init__(self, bad=None):
        self.events = []
        self.bad = bad
        self.batch_soak, self.timeout, self.canary_soak = 30, 60, 0

    def drain(self, batch):
        self.events.append(("drain", batch.instance_ids[0]))
        return Drained(nodes={"node-" + batch.instance_ids[0]: dict(evicted=["default/x"],
                                                                    workloads=["Deployment default/%s" % batch.instance_ids[0]])},
                       instances=dict((i, "node-" + i) for i in batch.instance_ids))

    def start(self, batch):
        self.events.append(("start", batch.instance_ids[0]))
        return Handle(batch)

    def finish(self, handle):
        self.events.append(("gone", handle.batch.instance_ids[0]))
        return handle

    # The gate (HealthGate's interface).
    soak_for = gates.HealthGate.soak_for

    def soak(self, seconds):
        self.events.append(("soak", seconds))

    def wait(self, label, refs):
        self.events.append(("gate", label, tuple(refs)))
        if self.bad in refs:
            raise UpgradeError(HEALTH_GATE_FAILED, "%s: not healthy" % label, workloads=[self.bad])
        return []


def gated_loop(steps, lines):
    clock = iter(range(1000, 2000))
    return ReplaceLoop(steps.drain, steps.start, steps.finish, lines.append, overlap=True, total=2,
                       clock=lambda: next(clock), gate=steps)


def test_issue27_item1_a_gated_batch_joins_its_termination_wait_soaks_then_gates_and_the_last_one_too():
    steps, lines = GatedSteps(), []
    state = gated_loop(steps, lines).run(planned_batches([["i-1"], ["i-2"]]))
    assert steps.events == [("drain", "i-1"), ("start", "i-1"), ("gone", "i-1"), ("soak", 30),
                            ("gate", "batch 1/2", ("Deployment default/i-1",)),
                            ("drain", "i-2"), ("start", "i-2"), ("gone", "i-2"), ("soak", 30),
                            ("gate", "batch 2/2", ("Deployment default/i-2",))]
    first = state.batches[0]
    assert first["gone"] <= first["soak_started"] < first["soak_ended"] < first["gate_passed"]
    assert (first["soak_seconds"], first["canary"], first["workloads"]) == (30, False, ["Deployment default/i-1"])
    assert any("batch 1/2: soak of 30 s started at" in line for line in lines)
    assert any("batch 2/2: health gate passed at" in line for line in lines)


def test_issue27_item1_a_failed_gate_stops_the_loop_before_the_next_batch():
    steps, lines = GatedSteps(bad="Deployment default/i-1"), []
    with pytest.raises(ReplaceFailed) as failed:
        gated_loop(steps, lines).run(planned_batches([["i-1"], ["i-2"]]))
    assert failed.value.error.code == HEALTH_GATE_FAILED
    assert ("drain", "i-2") not in steps.events
    record = failed.value.state.batches[0]
    assert "gate_failed" in record and "gate_passed" not in record
    assert failed.value.state.replaced_instances == ["i-1"]
    assert any("batch 1/2: health gate failed at" in line and "Deployment default/i-1 not healthy" in line
               for line in lines)


def test_issue27_item1_without_a_gate_the_termination_wait_still_overlaps_the_next_drain():
    steps = GatedSteps()
    steps.batch_soak = 0
    gated_loop(steps, []).run(planned_batches([["i-1"], ["i-2"]]))
    assert steps.events.index(("drain", "i-2")) < steps.events.index(("gone", "i-2"))
    assert not [e for e in steps.events if e[0] in ("soak", "gate")]


def test_issue27_item1_the_canary_batches_come_first_then_the_live_planner():
    asked = []

    def planner(state):
        asked.append(len(state.batches))
        return Batch(["i-9"]) if len(state.batches) < 3 else None

    next_batch = canary_first([["i-1"], ["i-2"]], planner)
    state = ReplaceState()
    chosen = []
    while True:
        batch = next_batch(state)
        if batch is None:
            break
        chosen.append((batch.instance_ids, batch.decrement))
        state.batches.append({})
    assert chosen == [(["i-1"], False), (["i-2"], False), (["i-9"], False)]
    assert asked == [2, 3] and next_batch.then is planner


# -- what the drain records for the gate ---------------------------------------------------------------------

def test_issue27_item1_the_drain_records_the_workloads_of_the_pods_it_moved():
    web = dict(make_pod("web-5d8f7-a", labels={"app": "web", "pod-template-hash": "5d8f7"}))
    web["metadata"]["ownerReferences"][0]["name"] = "web-5d8f7"
    pods = [web, make_pod("db-0", owner="StatefulSet")]
    node_result = run_drain(FakeCluster(pods)).to_dict()["node-a"]
    assert len(node_result["evicted"]) == 2
    # The ReplicaSet's pod counts for its Deployment (its pod-template-hash).
    assert node_result["workloads"] == ["Deployment default/web", "StatefulSet default/statefulset-1"]


# -- the report ----------------------------------------------------------------------------------------------

def test_issue27_item1_the_report_carries_the_soak_and_gate_of_a_gated_batch():
    record = dict(batch=1, instance_ids=["i-1"], nodes=["node-1"], started=1000.0, drained=1010.0, accepted=1011.0,
                  gone=1015.0, canary=True, soak_seconds=30, workloads=["Deployment default/web"],
                  soak_started=1015.0, soak_ended=1045.0, gate_passed=1047.5)
    batch = timeline.batch_report("upgrade", record, {"node-1": dict(evicted=["default/web-a"])})
    assert (batch["canary"], batch["soak_seconds"], batch["gate_workloads"]) == (True, 30, ["Deployment default/web"])
    assert (batch["soak_started_at"], batch["gate_passed_at"], batch["gate_failed_at"]) == (
        "1970-01-01T00:16:55.000Z", "1970-01-01T00:17:27.500Z", None)
    assert batch["waited_on"][-2:] == [dict(what="soak", seconds=30.0), dict(what="health_gate", seconds=2.5)]
    plain = timeline.batch_report("upgrade", dict(record, soak_started=None), {})
    assert "soak_seconds" not in plain and not [w for w in plain["waited_on"] if w["what"] == "soak"]
