# -*- coding: utf-8 -*-
# Copyright: Contributors to the eksops.nodegroup project
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""The ideal schedule benchmarks/upgrade.py compares an upgrade's wall time with (docs/performance.md)."""

import sys
from collections import Counter
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parents[3] / "benchmarks"))

from upgrade import (Config, ideal_drain_seconds, ideal_schedule, ideal_surge_schedule,  # noqa: E402
                     reaction_per_boot, reaction_per_round, reaction_per_stop)

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


NO_BOOTS = dict(rounds=0, mean=0.0, by_workload={}, stop=0.0, stop_by_node={}, boot=0.0, boot_by_instance={})


def test_budget_rounds_decide_the_drain():
    # paced: 3 pods one at a time -> 3 rounds; percent: minAvailable 80 % of 10 = 8 -> 2 at a time, 3 pods -> 2.
    pods = Counter({("default", "paced"): 3, ("default", "percent"): 3})
    assert ideal_drain_seconds(pods, SCENARIO) == pytest.approx(2 * 2.0 + 0.2)


def test_a_pod_ignoring_sigterm_stops_after_its_scaled_grace_period():
    assert ideal_drain_seconds(Counter({("default", "free"): 4}), SCENARIO) == pytest.approx(100 * 0.02)


def test_the_recorded_reaction_lengthens_each_round_of_its_budget():
    """Issue 11: a round costs pod_start_seconds plus the sandbox's own reaction as it recorded it for that
    budget; a budget without recorded rounds is charged the run's mean per round."""
    pods = Counter({("default", "paced"): 3, ("default", "percent"): 3})
    paced_only = dict(rounds=4, mean=0.1, by_workload={("default", "paced"): 0.3})
    assert ideal_drain_seconds(pods, SCENARIO, paced_only) == pytest.approx(2 * (2.0 + 0.3) + 0.2)
    run_mean = dict(rounds=4, mean=0.1, by_workload={})
    assert ideal_drain_seconds(pods, SCENARIO, run_mean) == pytest.approx(2 * (2.0 + 0.1) + 0.2)
    # One round, nothing waited for: no reaction to charge.
    assert ideal_drain_seconds(Counter({("default", "paced"): 1}), SCENARIO, paced_only) == pytest.approx(0.2)


def test_the_recorded_reaction_per_stop_is_charged_once_per_drain():
    """Issue 11: the drain ends when its last pods have stopped: their stop time and the sandbox's own reaction per
    stop as it recorded it, once, however many pods and rounds."""
    pods = Counter({("default", "paced"): 3, ("default", "percent"): 3})
    stopping = dict(rounds=4, mean=0.1, by_workload={}, stop=0.15)
    assert ideal_drain_seconds(pods, SCENARIO, stopping) == pytest.approx(2 * (2.0 + 0.1) + 0.2 + 0.15)
    assert ideal_drain_seconds(Counter(), SCENARIO, stopping) == 0.0


def test_a_drain_is_charged_the_recorded_reaction_to_its_nodes_last_stop():
    """The eviction that starts a drain's last stop came right after the pass that gave its budget back, so that
    stop waits for nearly a whole pass more than the run's mean: the drain of a set of nodes is charged the latest
    of their last stops' reactions as the sandbox recorded them (the mean where it recorded none)."""
    pods = Counter({("default", "paced"): 1})
    stopping = dict(rounds=0, mean=0.0, by_workload={}, stop=0.1, stop_by_node={"node-a": 0.19, "node-b": 0.05})
    assert ideal_drain_seconds(pods, SCENARIO, stopping, ("node-a", "node-b")) == pytest.approx(0.2 + 0.19)
    assert ideal_drain_seconds(pods, SCENARIO, stopping, ("node-c",)) == pytest.approx(0.2 + 0.1)
    batches = ideal_schedule(SCENARIO, [pods, pods], None, 1, stopping, [("node-a",), ("node-b",)])
    assert batches["upgrade"] == pytest.approx((0.2 + 0.19 + 1) + (0.2 + 0.05 + 1) + 0.5)


def test_the_scale_up_is_charged_the_recorded_reaction_to_its_slowest_boot_and_a_surge_step_the_mean():
    """Issue 11: the scale-up waits for all its new nodes, so for the slowest boot as the sandbox recorded it;
    without a record of its instances, and for a surge step's launches, the run's mean per boot."""
    booting = dict(NO_BOOTS, boot=0.1, boot_by_instance={"i-1": 0.15, "i-2": 0.25, "i-9": 0.4})
    assert ideal_schedule(SCENARIO, [], None, 1, booting, surge_instances=["i-1", "i-2"])["scale_up"] == \
        pytest.approx(0.5 + 1.5 + 0.25)
    assert ideal_schedule(SCENARIO, [], None, 1, booting)["scale_up"] == pytest.approx(0.5 + 1.5 + 0.1)
    ideal = ideal_surge_schedule(SCENARIO, [(1, 0, Counter(), ())], 1, booting)
    assert ideal["upgrade"] == pytest.approx(0.5 + 1.5 + 0.1)


def test_the_reaction_per_boot_is_the_runs_share_of_the_reports_running_totals():
    before = dict(boots=6, reaction_seconds=0.6, by_instance={"i-1": 0.1})
    after = dict(boots=8, reaction_seconds=1.0, by_instance={"i-1": 0.1, "i-2": 0.3, "i-3": 0.1})
    assert reaction_per_boot(before, after) == dict(boot=pytest.approx(0.2), boot_by_instance={"i-2": 0.3, "i-3": 0.1})
    assert reaction_per_boot(None, None) == dict(boot=0.0, boot_by_instance={})


def test_the_reaction_per_stop_is_the_runs_share_of_the_reports_running_totals():
    before = dict(stops=10, seconds=2.5, reaction_seconds=0.5,
                  by_node={"node-a": dict(stops=3, last_reaction_seconds=0.1)})
    after = dict(stops=14, seconds=3.6, reaction_seconds=0.9,
                 by_node={"node-a": dict(stops=3, last_reaction_seconds=0.1),
                          "node-b": dict(stops=4, last_reaction_seconds=0.18)})
    assert reaction_per_stop(before, after) == dict(stop=pytest.approx(0.4 / 4), stop_by_node={"node-b": 0.18})
    assert reaction_per_stop(after, after) == dict(stop=0.0, stop_by_node={})
    assert reaction_per_stop(None, None) == dict(stop=0.0, stop_by_node={})


def test_the_reaction_per_round_is_the_runs_share_of_the_reports_running_totals():
    before = dict(by_pdb={"default/paced": dict(rounds=2, reaction_seconds=0.5)})
    after = dict(by_pdb={"default/paced": dict(rounds=6, reaction_seconds=0.9),
                         "default/percent": dict(rounds=1, reaction_seconds=0.3)})
    reaction = reaction_per_round(before, after)
    assert reaction["rounds"] == 5 and reaction["mean"] == pytest.approx(0.7 / 5)
    assert reaction["by_workload"] == pytest.approx({("default", "paced"): 0.1, ("default", "percent"): 0.3})
    assert reaction_per_round(after, after) == dict(rounds=0, mean=0.0, by_workload={})
    assert reaction_per_round(None, None)["mean"] == 0.0


def test_rolling_schedule_shuts_down_once_at_the_end_of_the_phase():
    """Issue 11: a batch's post-drain wait counts, the EC2 shutdown after Auto Scaling accepted the termination
    does not hold up the next batch; the phase ends when the last batch's instances are gone."""
    batch = Counter({("default", "paced"): 2})
    ideal = ideal_schedule(SCENARIO, [batch, batch], None, post_drain_wait=1)
    per_batch = (2.0 + 0.2) + 1
    assert ideal == pytest.approx(dict(scale_up=2.0, upgrade=2 * per_batch + 0.5, scale_down=0.0,
                                       total=2.0 + 2 * per_batch + 0.5))


def test_rolling_scale_down_drains_waits_and_shuts_down_when_it_removes_nodes():
    surplus = Counter({("default", "free"): 1})
    ideal = ideal_schedule(SCENARIO, [], surplus, post_drain_wait=1)
    assert ideal["upgrade"] == 0.0 and ideal["scale_down"] == pytest.approx(100 * 0.02 + 1 + 0.5)
    assert ideal_schedule(SCENARIO, [], Counter(), post_drain_wait=1)["scale_down"] == pytest.approx(1 + 0.5)


def test_surge_schedule_boots_only_in_steps_that_launch_and_shuts_down_once():
    step = Counter({("default", "free"): 1})
    ideal = ideal_surge_schedule(SCENARIO, [(2, 1, step, ()), (0, 1, step, ())], post_drain_wait=1)
    drain = 100 * 0.02 + 1
    assert ideal["total"] == pytest.approx((2.0 + drain) + drain + 0.5)


def test_a_surge_launch_after_the_last_replacement_hides_its_shutdown():
    """A last step that only launches boots (2 s) while the instances terminated before it shut down (0.5 s)."""
    step = Counter({("default", "free"): 1})
    ideal = ideal_surge_schedule(SCENARIO, [(1, 1, step, ()), (1, 0, Counter(), ())], post_drain_wait=1)
    assert ideal["total"] == pytest.approx((2.0 + 100 * 0.02 + 1) + 2.0)


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
