# -*- coding: utf-8 -*-
# Copyright: Contributors to the eksops.nodegroup project
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Contract (the kubernetes python client and GET $SANDBOX_URL/report against a running sandbox): the report's
`pod_stops`, what the world takes to stop an evicted pod (issue 11 item 4).

The kubelet stops a pod within its grace period (a pod that handles SIGTERM in the quick stop, one that ignores it
in its whole scaled grace period); what the sandbox records beyond that is its own reaction (the kubelet acting on
its next pass, every controller_interval_seconds), which benchmarks/upgrade.py charges to the ideal schedule
rather than to the orchestrator. The sandbox only measures here; the test checks the figure is there and
plausible.
"""

from __future__ import annotations

import json
import urllib.request

import pytest
from kubernetes import client, config

from eks_sandbox.kube.pods import QUICK_STOP_SECONDS
from eks_sandbox.kube.testing import scenario
from harness import running, wait_for

INTERVAL = 0.05
GRACE_SCALE = 0.02
# One pass late by the plan; a loaded machine runs its passes late, so the bound is generous.
PLAUSIBLE_REACTION = 20 * INTERVAL

SCENARIO = scenario(
    name="pod-stops", cluster={"name": "pod-stops"},
    timings={"controller_interval_seconds": INTERVAL, "grace_period_scale": GRACE_SCALE},
    nodegroups=[{"name": "workers", "ami": "eks-node-1.30", "min_size": 0, "max_size": 4, "desired_capacity": 2}],
    workloads=[{"kind": "Deployment", "name": "quick", "replicas": 2},
               {"kind": "Deployment", "name": "stubborn", "replicas": 2, "ignore_sigterm": True,
                "termination_grace_period_seconds": 20}])


@pytest.fixture(scope="module")
def sandbox():
    with running(SCENARIO) as started:
        api = config.new_client_from_config(config_file=str(started.kubeconfig_path))
        started.core = client.CoreV1Api(api)
        yield started


def stops(sandbox) -> dict:
    with urllib.request.urlopen(sandbox.control_url + "/report", timeout=10) as response:
        return json.loads(response.read())["pod_stops"]


def evict_and_wait(sandbox, app: str) -> str:
    """Evict a running pod of ``app`` and wait until it is gone; returns its node."""
    pod = wait_for(lambda: next((p for p in sandbox.core.list_namespaced_pod("default", label_selector=f"app={app}").items
                                 if p.status.phase == "Running" and p.metadata.deletion_timestamp is None), None))
    name = pod.metadata.name
    sandbox.core.create_namespaced_pod_eviction(name, "default", client.V1Eviction(
        metadata=client.V1ObjectMeta(name=name, namespace="default")))
    wait_for(lambda: name not in {p.metadata.name for p in sandbox.core.list_namespaced_pod("default").items})
    return pod.spec.node_name


@pytest.mark.parametrize("app, stop", [("quick", QUICK_STOP_SECONDS), ("stubborn", 20 * GRACE_SCALE)])
def test_an_evicted_pod_stops_in_its_stop_time_plus_a_plausible_reaction(sandbox, app, stop):
    before = stops(sandbox)
    node = evict_and_wait(sandbox, app)
    after = stops(sandbox)
    assert after["stops"] == before["stops"] + 1
    # The node's last stop is this one.
    assert after["by_node"][node]["stops"] == before["by_node"].get(node, {"stops": 0})["stops"] + 1
    assert after["by_node"][node]["last_reaction_seconds"] == pytest.approx(
        after["reaction_seconds"] - before["reaction_seconds"], abs=0.002)
    seconds = after["seconds"] - before["seconds"]
    reaction = after["reaction_seconds"] - before["reaction_seconds"]
    # The stop itself, and the sandbox's reaction beyond it: nothing else.
    assert seconds == pytest.approx(stop + reaction, abs=0.01)
    # The report rounds its totals to the millisecond.
    assert -0.002 <= reaction <= after["reaction_seconds_max"] + 0.002, after
    assert after["reaction_seconds_max"] <= PLAUSIBLE_REACTION, after
