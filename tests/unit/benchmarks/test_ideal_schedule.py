"""The ideal schedule benchmarks/upgrade.py compares an upgrade's wall time with (docs/performance.md)."""

import sys
from collections import Counter
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parents[3] / "benchmarks"))

from upgrade import Config, ideal_drain_seconds, ideal_schedule, ideal_surge_schedule  # noqa: E402

TIMINGS = dict(instance_pending_seconds=0.5, node_boot_seconds=1.5, instance_shutdown_seconds=0.5,
               pod_start_seconds=2.0, grace_period_scale=0.02)


def workload(name, replicas, pdb=None, grace=30, ignore_sigterm=False):
    return dict(kind="Deployment", namespace="default", name=name, replicas=replicas, pdb=pdb,
                termination_grace_period_seconds=grace, ignore_sigterm=ignore_sigterm)


SCENARIO = dict(timings=TIMINGS, workloads=[
    workload("paced", 10, pdb=dict(max_unavailable=1, min_available=None)),
    workload("percent", 10, pdb=dict(max_unavailable=None, min_available="80%")),
    workload("free", 10, grace=100, ignore_sigterm=True),
])


def test_budget_rounds_decide_the_drain():
    # paced: 3 pods one at a time -> 3 rounds; percent: minAvailable 80 % of 10 = 8 -> 2 at a time, 3 pods -> 2.
    pods = Counter({("default", "paced"): 3, ("default", "percent"): 3})
    assert ideal_drain_seconds(pods, SCENARIO) == pytest.approx(2 * 2.0 + 0.2)


def test_a_pod_ignoring_sigterm_stops_after_its_scaled_grace_period():
    assert ideal_drain_seconds(Counter({("default", "free"): 4}), SCENARIO) == pytest.approx(100 * 0.02)


def test_rolling_schedule_adds_scale_up_batches_and_surplus():
    batch = Counter({("default", "paced"): 2})
    ideal = ideal_schedule(SCENARIO, [batch, batch], None, post_drain_wait=1)
    per_batch = (2.0 + 0.2) + 1 + 0.5
    assert ideal == pytest.approx(dict(scale_up=2.0, upgrade=2 * per_batch, scale_down=0.0,
                                       total=2.0 + 2 * per_batch))


def test_surge_schedule_boots_only_in_steps_that_launch():
    step = Counter({("default", "free"): 1})
    ideal = ideal_surge_schedule(SCENARIO, [(2, step), (0, step)], post_drain_wait=1)
    drain = 100 * 0.02 + 1 + 0.5
    assert ideal["total"] == pytest.approx((2.0 + drain) + drain)


@pytest.mark.parametrize("text, expected", [("rolling:10", {"max_unavailable": 10}),
                                            ("surge:5,0", {"max_surge": 5, "max_unavailable": 0})])
def test_configurations(text, expected):
    assert Config(text).extra_vars() == expected


def test_a_rolling_configuration_runs_with_its_schedule_and_a_surge_one_without():
    """SPEC B1: the benchmark runs each rolling configuration under both schedules, side by side."""
    rolling, surge = Config("rolling:1", "eks"), Config("surge:5,0", "eks")
    assert (rolling.extra_vars(), rolling.label) == ({"max_unavailable": 1, "schedule": "eks"}, "rolling:1 eks")
    assert (surge.extra_vars(), surge.label) == ({"max_surge": 5, "max_unavailable": 0}, "surge:5,0")


@pytest.mark.parametrize("text", ["rolling:0", "surge:0,0", "surge:5", "blue:1", "rolling:1,2"])
def test_bad_configurations_are_refused(text):
    with pytest.raises(ValueError, match="not a configuration"):
        Config(text)
