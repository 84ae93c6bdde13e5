# -*- coding: utf-8 -*-
# Copyright: Contributors to the eksops.nodegroup project
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""The figures benchmarks/fleet.py prints (issue 28 item 4): each wave's slowest node group from the fleet report,
and the request rates of a run from the sandbox report's counts per tenth of a second."""

import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parents[3] / "benchmarks"))

from fleet import rates, waves  # noqa: E402


def test_each_waves_slowest_node_group_is_the_longest_run_of_its_rows():
    def row(host, wave, started, finished, seconds):
        return {"host": host, "wave": wave, "started_at": "2026-11-29T02:%s" % started,
                "finished_at": "2026-11-29T02:%s" % finished, "total_seconds": seconds}

    report = {"rows": [row("a/system", 1, "00:00Z", "00:30Z", 28.5), row("b/system", 2, "00:31Z", "01:11Z", 30.1),
                       row("c/system", 2, "00:31Z", "01:11Z", 38.2)]}
    assert waves(report) == [
        {"wave": 1, "nodegroups": 1, "slowest": "a/system", "slowest_seconds": 28.5, "span_seconds": 30.0},
        {"wave": 2, "nodegroups": 2, "slowest": "c/system", "slowest_seconds": 38.2, "span_seconds": 40.0}]


def test_the_peak_rate_is_the_busiest_sliding_window_of_the_run_between_two_reports():
    started = 1000.0  # tenth 10000
    before = {"10000": 7}  # counted before the run began: not the run's
    after = {"10000": 9, "10005": 10, "10014": 10, "10030": 1, "10500": 50}  # 10500 is after the run
    result = rates(before, after, started, started + 20.0)
    assert result["requests"] == 2 + 10 + 10 + 1
    assert result["mean_per_second"] == pytest.approx(23 / 20.0)
    assert result["peak_per_second_1s"] == pytest.approx(20.0)  # tenths 10005-10014 in one 1 s window
    assert result["peak_at_1s"] == pytest.approx(0.5)
    assert result["peak_per_second_10s"] == pytest.approx(2.3)
