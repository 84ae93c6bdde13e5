# -*- coding: utf-8 -*-
# Copyright: Contributors to the eksops.nodegroup project
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Evictions paced by the PDBs' own disruptionsAllowed (_drain/budget_gate.py, SPEC P1, P4, S5): which PDBs hold a
pod, then drains on a fake API whose PDBs spend and refill their budget."""

from __future__ import annotations

import time

from ansible_collections.eksops.nodegroup.plugins.module_utils._drain import eviction
from ansible_collections.eksops.nodegroup.plugins.module_utils._drain.budget_gate import matching_pdbs

from ...fakes import FakeCluster, api_error, make_pod, run_drain


def test_matching_pdbs_names_every_pdb_of_the_pod():
    pdbs = [{"metadata": {"name": n}, "spec": {"selector": {"matchLabels": {"app": a}}}}
            for n, a in (("b-pdb", "web"), ("a-pdb", "web"), ("db-pdb", "db"))]
    assert matching_pdbs(make_pod("w"), pdbs) == ["a-pdb", "b-pdb"]


# ----------------------------------------------------------------------------------------------------------
# Pacing by the PDBs' status (S5)
# ----------------------------------------------------------------------------------------------------------

def budget(name="web-pdb", allowed=1, app="web"):
    return {"metadata": {"name": name, "namespace": "default"},
            "spec": {"selector": {"matchLabels": {"app": app}}}, "status": {"disruptionsAllowed": allowed}}


def test_S5_evictions_follow_the_budget_instead_of_collecting_429s():
    cluster = FakeCluster([make_pod("web-%d" % i) for i in range(8)] + [make_pod("db-0", labels={"app": "db"})],
                          pdbs=[budget(allowed=1)])
    started = time.monotonic()
    result = run_drain(cluster, drain_timeout=20, pdb_retry_seconds=eviction.PDB_RETRY_SECONDS)
    assert result.error() is None and len(result.to_dict()["node-a"]["evicted"]) == 9
    # one disruption at a time, released by the PDB watch (0.1 s refills), not by 5 s retries
    assert time.monotonic() - started < 5
    evictions = cluster.verbs("evict")
    assert len(evictions) <= 9 + 1   # at most the first probe is refused
    assert len(cluster.verbs("watch", "pdbs")) >= 1 and len(cluster.verbs("list", "pdbs")) == 1


def test_S5_a_blocked_budget_is_probed_once_per_interval_not_once_per_pod():
    cluster = FakeCluster([make_pod("web-%d" % i) for i in range(6)], pdbs=[budget(allowed=0)])
    result = run_drain(cluster, drain_timeout=1, pdb_retry_seconds=0.2)
    failed = result.to_dict()["node-a"]["failed"]
    assert len(failed) == 6 and all(f["pdb"] == "web-pdb" for f in failed)
    # six pods held by the gate at once for the whole second: counted once, not six times
    assert 0.7 <= result.to_dict()["node-a"]["pdb_wait_seconds"] <= 1.3
    # kubectl would send 6 pods x 5 retries here; we send one per budget per interval
    assert 1 / 0.2 - 2 <= len(cluster.verbs("evict")) <= 1 / 0.2 + 2
    assert "web-pdb" in result.error().msg


def test_S5_budget_gate_falls_back_to_the_server_when_pdbs_cannot_be_watched():
    cluster = FakeCluster([make_pod("web-0"), make_pod("web-1")], pdbs=[budget(allowed=1)])
    cluster.pdbs.faults["list"].append(api_error(403))
    result = run_drain(cluster)
    assert result.error() is None and len(result.to_dict()["node-a"]["evicted"]) == 2


def test_the_pods_of_the_budget_that_needs_the_most_rounds_are_evicted_first():
    """Issue 11 item 4: a drain lasts as long as its longest chain of budget rounds. In list order the pods of a
    budget allowing one disruption at a time (worker, 3 rounds here) waited behind every other pod of the node; now
    its chain starts first, then the budget allowing two of its three pods (2 rounds), then the unpaced pods."""
    pods = ([make_pod("api-%d" % i, labels={"app": "api"}) for i in range(3)]
            + [make_pod("cache-%d" % i, labels={"app": "cache"}) for i in range(4)]
            + [make_pod("worker-%d" % i, labels={"app": "worker"}) for i in range(3)])
    cluster = FakeCluster(pods, pdbs=[budget("api-pdb", allowed=2, app="api"),
                                      budget("worker-pdb", allowed=1, app="worker")])
    result = run_drain(cluster, drain_timeout=20, eviction_concurrency=1)
    assert result.error() is None
    evicted = [request[2].split("/")[1] for request in cluster.verbs("evict")]
    assert evicted[0] == "worker-0", evicted
    assert evicted.index("api-0") < evicted.index("cache-0"), evicted
