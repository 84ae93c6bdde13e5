# -*- coding: utf-8 -*-
# Copyright: Contributors to the eksops.nodegroup project
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Contract (the kubernetes python client and GET $SANDBOX_URL/report against a running sandbox): the report's
`pdb_rounds`, what the world takes per disruption-budget round (issue 11 item 4).

A round: an eviction uses a budget up, and the budget allows a disruption again once a replacement is Ready. The
replacement's own start is pod_start_seconds; what the sandbox records beyond it (its ReplicaSet controller,
scheduler, kubelet and disruption controller each acting on their next pass, every controller_interval_seconds)
is its reaction time, which benchmarks/upgrade.py charges to the ideal schedule rather than to the orchestrator.
The sandbox only measures here; the test checks the figure is there and plausible: at least 0, at most a few
controller intervals.
"""

from __future__ import annotations

import json
import urllib.request

import pytest
from kubernetes import client, config

from eks_sandbox.kube.testing import scenario
from harness import running, wait_for

# Long enough that the requests a test makes right after an eviction (a LIST and a POST, or a GET) come before the
# budget is given back, even on a loaded 2-core machine: with 0.3 s a second eviction was once let through there.
POD_START = 2.0
INTERVAL = 0.05
# Up to two passes by the plan (the ReplicaSet controller creates and the scheduler binds on the pass after the
# eviction, the kubelet starts the pod on the first pass pod_start_seconds later); a loaded machine runs its passes
# late, so the bound is generous, but well under POD_START: a reaction that counted the pod's own start would fail.
PLAUSIBLE_REACTION = 20 * INTERVAL

SCENARIO = scenario(
    name="pdb-rounds", cluster={"name": "pdb-rounds"},
    timings={"pod_start_seconds": POD_START, "controller_interval_seconds": INTERVAL},
    nodegroups=[{"name": "workers", "ami": "eks-node-1.30", "min_size": 0, "max_size": 4, "desired_capacity": 2}],
    workloads=[{"kind": "Deployment", "name": "paced", "replicas": 3, "pdb": {"max_unavailable": 1}},
               {"kind": "Deployment", "name": "pair", "replicas": 4, "pdb": {"max_unavailable": 2}}])


@pytest.fixture(scope="module")
def sandbox():
    with running(SCENARIO) as started:
        api = config.new_client_from_config(config_file=str(started.kubeconfig_path))
        started.core, started.policy = client.CoreV1Api(api), client.PolicyV1Api(api)
        yield started


def report(sandbox) -> dict:
    with urllib.request.urlopen(sandbox.control_url + "/report", timeout=10) as response:
        return json.loads(response.read())


def allowed(sandbox, name: str) -> int:
    return sandbox.policy.read_namespaced_pod_disruption_budget(name, "default").status.disruptions_allowed


def ready(pod) -> bool:
    return pod.status.phase == "Running" and any(c.type == "Ready" and c.status == "True"
                                                 for c in pod.status.conditions or [])


def evict_one(sandbox, app: str) -> None:
    """Evict a Ready pod of ``app``: a Pending one (a replacement not started yet) is evicted without asking its
    budget (the Eviction API ignores the PDB for Pending pods), so it would neither use the budget up nor be refused."""
    pod = next(p for p in sandbox.core.list_namespaced_pod("default", label_selector=f"app={app}").items
               if p.metadata.deletion_timestamp is None and ready(p))
    sandbox.core.create_namespaced_pod_eviction(pod.metadata.name, "default", client.V1Eviction(
        metadata=client.V1ObjectMeta(name=pod.metadata.name, namespace="default")))


def rounds_of(sandbox, pdb: str) -> dict:
    return report(sandbox)["pdb_rounds"]["by_pdb"].get(pdb, {"rounds": 0})


def test_a_budget_used_up_and_given_back_is_one_round_with_a_plausible_reaction(sandbox):
    wait_for(lambda: allowed(sandbox, "paced") == 1)
    before = report(sandbox)["pdb_rounds"]
    assert "default/paced" not in before["by_pdb"], "no eviction yet, no round"
    for done in (1, 2):
        evict_one(sandbox, "paced")
        assert allowed(sandbox, "paced") == 0
        wait_for(lambda: allowed(sandbox, "paced") == 1)
        paced = wait_for(lambda: (r := rounds_of(sandbox, "default/paced"))["rounds"] == done and r)
    # A round lasts the replacement's start plus the sandbox's reaction, and nothing else.
    assert paced["seconds"] == pytest.approx(2 * POD_START + paced["reaction_seconds"], abs=0.01)
    assert 0 <= paced["reaction_seconds"] / 2 <= paced["reaction_seconds_max"] <= PLAUSIBLE_REACTION, paced
    totals = report(sandbox)["pdb_rounds"]
    assert totals["rounds"] == 2 and totals["reaction_seconds"] == paced["reaction_seconds"]


def test_a_budget_spent_in_two_steps_counts_its_round_from_the_first_eviction(sandbox):
    """maxUnavailable 2: the first eviction leaves one disruption, the second uses the budget up. The budget comes
    back when the first replacement is Ready, so the round is measured from the first eviction: at least
    pod_start_seconds, even though the second eviction came later."""
    wait_for(lambda: allowed(sandbox, "pair") == 2)
    evict_one(sandbox, "pair")
    assert rounds_of(sandbox, "default/pair")["rounds"] == 0 and allowed(sandbox, "pair") == 1
    evict_one(sandbox, "pair")
    pair = wait_for(lambda: (r := rounds_of(sandbox, "default/pair"))["rounds"] == 1 and r)
    assert pair["seconds"] >= POD_START
    assert 0 <= pair["reaction_seconds"] <= PLAUSIBLE_REACTION, pair
    wait_for(lambda: allowed(sandbox, "pair") == 2)
    assert rounds_of(sandbox, "default/pair")["rounds"] == 1, "getting back to 2 allowed is no new round"


def test_a_refused_eviction_starts_no_round(sandbox):
    wait_for(lambda: allowed(sandbox, "paced") == 1)
    before = rounds_of(sandbox, "default/paced")["rounds"]
    evict_one(sandbox, "paced")
    with pytest.raises(client.exceptions.ApiException) as refused:
        evict_one(sandbox, "paced")
    assert refused.value.status == 429
    wait_for(lambda: rounds_of(sandbox, "default/paced")["rounds"] == before + 1)
    wait_for(lambda: allowed(sandbox, "paced") == 1)
    assert rounds_of(sandbox, "default/paced")["rounds"] == before + 1
