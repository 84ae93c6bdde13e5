# -*- coding: utf-8 -*-
# Copyright: Contributors to the eksops.nodegroup project
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Eviction storm (issue 10 item 7; SPEC Z3, D14, U5): a Deployment whose pods tolerate every taint keeps landing
on the cordoned node that node_drain drains.

Before: every replacement was evicted in turn until drain_timeout (599 evictions in 22 s at drain_timeout=20,
the workload at 0 of 3 Ready throughout; with force 596 evictions and 1805 deletes in 82 s, and it still failed).
Now the drain sees the Deployment's pods come back, stops evicting them and fails the node at once naming the
Deployment and why; with force it leaves them on the node, reports them and finishes, and the check before the
instance's termination lets them go with it.

One sandbox for the module: the tests run in order (the forced drain reruns the drain that failed).
"""

from __future__ import annotations

import time

import pytest

from nodegroup_state import call_counts, calls_between, instance_id_of, nodegroup_nodes
from sandbox_helpers import run_module, running_sandbox
from scenarios import pinned_pools

STORM_SCENARIO = pinned_pools("storm", 2, [
    # Z3: tolerates the cordon, and its only node is the one drained: every evicted pod comes back there
    {"kind": "Deployment", "name": "everywhere", "replicas": 3, "tolerate_all": True, "nodegroup": "solo"},
    {"kind": "Deployment", "name": "web", "replicas": 2, "nodegroup": "workers"},
    {"kind": "DaemonSet", "name": "node-agent", "namespace": "kube-system"},
])
DRAIN_TIMEOUT = 120
AGENT = "eksops.nodegroup/0.1.0/node_drain"
REASON = "its pods tolerate every taint and are scheduled back onto the cordoned node"


@pytest.fixture(scope="module")
def storm(tmp_path_factory):
    with running_sandbox(STORM_SCENARIO, tmp_path_factory.mktemp("sandbox-storm")) as handle:
        yield handle


def solo_node(sandbox):
    [node] = nodegroup_nodes(sandbox, "solo")
    return node


def pods_on(sandbox, node_name, prefix="everywhere-"):
    pods = sandbox.core_v1().list_namespaced_pod("default", field_selector="spec.nodeName=%s" % node_name).items
    return sorted("default/%s" % p.metadata.name for p in pods
                  if p.metadata.name.startswith(prefix) and not p.metadata.deletion_timestamp)


def removals(calls):
    """(evictions, deletes) that node_drain sent, accepted or not."""
    evictions = sum(n for key, n in calls.items() if key.startswith(AGENT + " create pods/eviction "))
    deletes = sum(n for key, n in calls.items() if key.startswith(AGENT + " delete pods "))
    return evictions, deletes


def drain(sandbox, node_name, force):
    before = call_counts(sandbox)
    started = time.monotonic()
    result = run_module(sandbox, "node_drain", {"name": node_name, "post_drain_wait": 1,
                                                "delete_options": {"wait_timeout": DRAIN_TIMEOUT, "force": force}})
    elapsed = time.monotonic() - started
    return result, elapsed, removals(calls_between(before, call_counts(sandbox)))


def test_issue10_item7_without_force_the_drain_fails_fast_naming_the_deployment(storm):
    """issue 10 item 7: the tolerate-all Deployment's pods come back to the cordoned node; the drain stops
    evicting them and fails the node with PodEvictionFailure naming the Deployment and why, in seconds, not at
    drain_timeout, after a handful of evictions."""
    node = solo_node(storm).metadata.name
    originals = pods_on(storm, node)
    assert len(originals) == 3
    result, elapsed, (evictions, deletes) = drain(storm, node, force=False)
    print("without force: %.1f s, %d evictions, %d deletes" % (elapsed, evictions, deletes))
    assert result["failed"] and result["code"] == "PodEvictionFailure", result
    assert "Deployment default/everywhere: " + REASON in result["msg"]
    assert "stopped evicting it" in result["msg"] and "force" in result["msg"]
    assert elapsed < DRAIN_TIMEOUT / 4, elapsed
    # the three originals once each, at most a few more that were in flight: not hundreds
    assert 3 <= evictions <= 6 and deletes == 0
    node_result = result["drain"]["nodes"][node]
    [returning] = node_result["returning_workloads"]
    assert returning["workload"] == "Deployment default/everywhere" and returning["cause"] == "tolerates_all"
    assert set(originals) <= set(node_result["evicted"])
    assert returning["pods"] and not set(returning["pods"]) & set(node_result["evicted"])
    assert storm.core_v1().read_node(node).spec.unschedulable
    report = storm.report()
    assert report["pods_lost"] == []


def test_issue10_item7_with_force_the_drain_finishes_without_an_eviction_storm(storm):
    """issue 10 item 7: with force the returning pods are not evicted in a loop either: they are left on the node,
    reported in the module result (returning_workloads, skipped, a warning) and the drain succeeds."""
    node = solo_node(storm).metadata.name
    result, elapsed, (evictions, deletes) = drain(storm, node, force=True)
    print("with force: %.1f s, %d evictions, %d deletes" % (elapsed, evictions, deletes))
    assert not result["failed"], result.get("msg")
    assert elapsed < DRAIN_TIMEOUT / 4, elapsed
    assert evictions <= 6 and deletes == 0
    node_result = result["drain"]["nodes"][node]
    [returning] = node_result["returning_workloads"]
    assert returning["workload"] == "Deployment default/everywhere" and returning["reason"] == REASON
    left = pods_on(storm, node)
    assert left and set(left) <= set(returning["pods"])
    skipped = dict((e["pod"], e["reason"]) for e in node_result["skipped"])
    assert all(skipped[p].endswith("left on the node to go with it (force)") for p in left)
    assert any("Deployment default/everywhere" in w for w in result.get("warnings", []))
    annotations = storm.core_v1().read_node(node).metadata.annotations
    assert "Deployment default/everywhere" in annotations["eksops.nodegroup/left-pods"]
    # the workload is back at full strength on the node instead of at 0 Ready for the whole drain
    deadline = time.monotonic() + 30
    while storm.report()["workloads"]["default/everywhere"]["ready"] < 3:
        assert time.monotonic() < deadline, storm.report()["workloads"]["default/everywhere"]
        time.sleep(0.5)
    assert storm.report()["pods_lost"] == []


def test_issue10_item7_the_pods_left_by_force_go_with_the_node(storm):
    """issue 10 item 7 (U5): the check before a termination lets the pods a forced drain left go with the node;
    nothing else is lost."""
    node = solo_node(storm)
    left = pods_on(storm, node.metadata.name)
    result = run_module(storm, "asg_instance_terminate", {
        "cluster_name": "storm", "nodegroup_name": "solo", "instance_ids": [instance_id_of(node)],
        "should_decrement_desired_capacity": False})
    assert not result["failed"], result.get("msg")
    deadline = time.monotonic() + 60
    while not storm.report()["pods_lost"]:
        assert time.monotonic() < deadline, "the node's instance was not terminated"
        time.sleep(0.5)
    lost = sorted(entry["pod"] for entry in storm.report()["pods_lost"])
    assert lost == left
