# -*- coding: utf-8 -*-
# Copyright: Contributors to the eksops.nodegroup project
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Faults (counts, seeded probabilities, after_seconds, arming) and the Recorder."""

from __future__ import annotations

import threading
from pathlib import Path

import pytest

from eks_sandbox.faults import Faults
from eks_sandbox.recorder import Recorder
from eks_sandbox.scenario.fields import ScenarioError
from eks_sandbox.scenario.loader import load_scenario

SCENARIOS_DIR = Path(__file__).resolve().parents[1] / "scenarios"


class FakeClock:
    """The time function Faults is given. Not the unit tests' fakes.FakeClock: the sandbox is its own package, run in
    its own process (pytest.ini), and those fakes import the collection (ansible_collections.eksops.nodegroup)."""

    def __init__(self):
        self.now = 1000.0

    def __call__(self) -> float:
        return self.now


def test_count_fires_for_the_first_n_matching_requests_only():
    faults = Faults([{"type": "k8s_error", "verb": "create", "resource": "pods/eviction", "status": 429,
                      "retry_after": 1, "count": 2}], seed=0)
    assert faults.k8s_error("get", "pods") is None                   # not matching: not counted
    assert faults.k8s_error("create", "pods") is None                # subresource must match exactly
    assert faults.k8s_error("create", "pods/eviction") == (429, 1)
    assert faults.k8s_error("create", "pods/eviction") == (429, 1)
    assert faults.k8s_error("create", "pods/eviction") is None
    assert faults.fired_counts()[0]["fired"] == 2


def test_wildcards_and_no_rate_fire_every_time():
    faults = Faults([{"type": "k8s_error", "status": 503}, {"type": "aws_error", "code": "Throttling"}], seed=0)
    assert all(faults.k8s_error(verb, "nodes") == (503, None) for verb in ("get", "list", "patch"))
    assert [faults.aws_error(a) for a in ("DescribeInstances", "CreateLaunchTemplateVersion")] == ["Throttling"] * 2


def _draws(seed: int, n: int = 400) -> list[bool]:
    faults = Faults([{"type": "aws_error", "action": "DescribeAutoScalingGroups", "code": "Throttling",
                      "probability": 0.25}], seed=seed)
    return [faults.aws_error("DescribeAutoScalingGroups") is not None for dummy in range(n)]


def test_probability_is_seeded_and_roughly_right():
    first, again, other = _draws(7), _draws(7), _draws(8)
    assert first == again
    assert first != other
    assert 60 < sum(first) < 140   # 0.25 x 400 = 100; binomial sd ~ 8.7


def test_probability_zero_and_one():
    never = Faults([{"type": "watch_gone", "probability": 0.0}], seed=1)
    always = Faults([{"type": "watch_gone", "probability": 1.0}], seed=1)
    assert not any(never.watch_gone() for dummy in range(50))
    assert all(always.watch_gone() for dummy in range(50))


def test_after_seconds_counts_from_arming_and_nothing_fires_before_arming():
    clock = FakeClock()
    faults = Faults([{"type": "launch_failure", "availability_zone": "us-west-2b", "after_seconds": 5,
                      "code": "InsufficientInstanceCapacity"}], seed=0, armed=False, clock=clock)
    clock.now += 100
    assert faults.launch_failure("us-west-2b") is None               # not armed yet
    faults.arm()
    assert faults.armed
    clock.now += 4.9
    assert faults.launch_failure("us-west-2b") is None
    clock.now += 0.2
    assert faults.launch_failure("us-west-2a") is None               # other AZ
    assert faults.launch_failure("us-west-2b") == "InsufficientInstanceCapacity"


def test_watch_drop_gives_the_stream_lifetime():
    faults = Faults([{"type": "watch_drop", "every_seconds": 2, "count": 1}], seed=0)
    assert faults.watch_drop_after() == 2.0
    assert faults.watch_drop_after() is None
    assert Faults([], seed=0).watch_drop_after() is None


def test_autoscaler_fires_once_and_waits_for_old_nodes_gone():
    faults = Faults([{"type": "autoscaler", "nodegroup": "workers", "increase_by": 2, "when": "old_nodes_gone"}],
                    seed=0)
    assert faults.autoscaler_increase("workers", old_nodes_gone=False) == 0
    assert faults.autoscaler_increase("other", old_nodes_gone=True) == 0
    assert faults.autoscaler_increase("workers", old_nodes_gone=True) == 2
    assert faults.autoscaler_increase("workers", old_nodes_gone=True) == 0


def test_autoscaler_after_seconds():
    clock = FakeClock()
    faults = Faults([{"type": "autoscaler", "nodegroup": "workers", "after_seconds": 10},
                     {"type": "autoscaler", "nodegroup": "workers", "increase_by": 3, "after_seconds": 10}],
                    seed=0, clock=clock)
    assert faults.autoscaler_increase("workers", old_nodes_gone=True) == 0
    clock.now += 10
    assert faults.autoscaler_increase("workers", old_nodes_gone=False) == 4
    assert faults.autoscaler_increase("workers", old_nodes_gone=False) == 0


def test_specs_are_validated_and_defaulted():
    with pytest.raises(ScenarioError, match=r"faults\[1\]\.type"):
        Faults([{"type": "watch_gone"}, {"type": "meteor"}], seed=0)
    assert Faults([{"type": "aws_error"}], seed=0).aws_error("Anything") == "Throttling"


def test_counts_hold_under_concurrency():
    faults = Faults([{"type": "k8s_error", "count": 50}], seed=0)
    hits = []

    def hammer():
        for dummy in range(100):
            if faults.k8s_error("get", "pods"):
                hits.append(1)

    threads = [threading.Thread(target=hammer) for dummy in range(8)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert len(hits) == 50


def test_recorder_counts_keys_and_lost_pods():
    recorder = Recorder(max_events=3)
    recorder.k8s_request("eksops/1.0", "create", "pods/eviction", 429)
    recorder.k8s_request("eksops/1.0", "create", "pods/eviction", 429)
    recorder.k8s_request("", "get", "nodes", 200)
    recorder.aws_call("DescribeAutoScalingGroups", None)
    recorder.aws_call("DescribeAutoScalingGroups", "Throttling")
    recorder.pod_lost("default", "web-1", "ip-10-0-1-1.us-west-2.compute.internal")
    for i in range(4):
        recorder.event("tick", n=i)
    assert recorder.k8s_requests() == {"eksops/1.0 create pods/eviction 429": 2, "- get nodes 200": 1}
    assert recorder.aws_calls() == {"DescribeAutoScalingGroups OK": 1, "DescribeAutoScalingGroups Throttling": 1}
    [lost] = recorder.pods_lost()
    assert lost["pod"] == "default/web-1" and lost["node"].startswith("ip-10-0-1-1")
    assert [e["n"] for e in recorder.events()] == [1, 2, 3]          # bounded: the oldest are dropped
    assert recorder.events_dropped() == 2


@pytest.mark.parametrize("scenario_file", sorted(SCENARIOS_DIR.glob("*.yaml")), ids=lambda path: path.stem)
def test_faults_accept_every_shipped_scenario_as_loaded(scenario_file):
    """The runtime hands load_scenario's normalized faults to Faults, which normalizes them again."""
    scenario = load_scenario(scenario_file)
    faults = Faults(scenario["faults"], scenario["seed"])
    assert len(faults.fired_counts()) == len(scenario["faults"])
