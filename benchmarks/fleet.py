# -*- coding: utf-8 -*-
# Copyright: Contributors to the eksops.nodegroup project
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""The whole sandbox fleet upgraded by playbooks/upgrade_fleet.yml with several forks (issue 28): the wall time
against the sum over waves of each wave's slowest node group, and the AWS and Kubernetes request rates per region
and per cluster, with the host's request budgets (issue 28 item 4) and without them, side by side.

The scenario is tests/sandbox/scenarios/fleet.yaml without its bad AMI (the arm64 AMI whose nodes never become
Ready, there to show the halt), so that every node group upgrades: 3 clusters in 2 regions, 8 node groups, 6 waves.
Each configuration gets a fresh sandbox, one after the other.

    .venv/bin/python benchmarks/fleet.py [--configs forks3:budgets forks3:unbounded forks3:tight] [--json PATH]
"""

from __future__ import annotations

import json
import subprocess
import sys
import time
from datetime import datetime
from pathlib import Path
from typing import Any

import yaml

from common import REPO_ROOT, argument_parser, print_table, running_sandbox, scenario_path, write_json
from sandbox_helpers import BIN_DIR, ansible_env

PLAYBOOK = REPO_ROOT / "playbooks" / "upgrade_fleet.yml"
RATE_BUCKET_SECONDS = 0.1  # the sandbox report's request times (tests/sandbox/README.md, "Report")
WINDOWS = (1.0, 10.0)
# The fleet's variables as the molecule scenario `fleet` gives them, without a bake: the sandbox's short timings.
FLEET_VARS = {"kubernetes_version": "1.30", "accept_owner_revert": True, "node_ready_timeout": 60,
              "drain_timeout": 120, "post_drain_wait": 1, "fleet_bake_seconds": 0}
# The request budgets of each configuration: the defaults, none, and tight ones that a run of the sandbox's fleet
# must wait for (to show the bound holding with several forks).
BUDGETS = {"budgets": {}, "unbounded": {"aws_requests_per_second": 0, "k8s_requests_per_second": 0},
           "tight": {"aws_requests_per_second": 2, "k8s_requests_per_second": 5}}
GOAL = 1.15
RUN_TIMEOUT = 1800


def whole_fleet_scenario(directory: Path) -> Path:
    """fleet.yaml without the never-Ready AMI, written under ``directory``."""
    raw = yaml.safe_load(scenario_path("fleet").read_text())
    for ami in raw["amis"]:
        ami.pop("never_ready", None)
    path = directory / "bench_fleet.yaml"
    path.write_text(yaml.safe_dump({**raw, "name": "bench_fleet"}, sort_keys=False))
    return path


def epoch(stamp: str) -> float:
    return datetime.fromisoformat(stamp.replace("Z", "+00:00")).timestamp()


def waves(report: dict[str, Any]) -> list[dict[str, Any]]:
    """Each wave's slowest node group, from the fleet report's rows: a node group's time is its run's
    ``total_seconds`` (the sum of its phases, as its own report measures them); and the wave's span, from its first
    row's start to its last row's end (whole seconds: the linear strategy runs a wave's tasks in step, so every
    row of a wave ends with its slowest)."""
    by_wave: dict[int, list[dict[str, Any]]] = {}
    for row in report["rows"]:
        by_wave.setdefault(row["wave"], []).append(row)
    result = []
    for wave, rows in sorted(by_wave.items()):
        slowest = max(rows, key=lambda row: row["total_seconds"])
        result.append({"wave": wave, "nodegroups": len(rows), "slowest": slowest["host"],
                       "slowest_seconds": slowest["total_seconds"],
                       "span_seconds": max(epoch(row["finished_at"]) for row in rows)
                       - min(epoch(row["started_at"]) for row in rows)})
    return result


def rates(times_before: dict[str, int], times_after: dict[str, int], started: float, finished: float
          ) -> dict[str, float]:
    """Requests of the run (counted per tenth of a second between two sandbox reports): how many, the mean per
    second over the run, and the peak per second over a sliding window of each of WINDOWS."""
    first, last = int(started / RATE_BUCKET_SECONDS), int(finished / RATE_BUCKET_SECONDS)
    counts = [times_after.get(str(index), 0) - times_before.get(str(index), 0) for index in range(first, last + 1)]
    result = {"requests": sum(counts), "mean_per_second": sum(counts) / max(finished - started, 1e-9)}
    for window in WINDOWS:
        width = max(1, int(round(window / RATE_BUCKET_SECONDS)))
        running = sum(counts[:width])
        peak, peak_end = running, width
        for index in range(width, len(counts)):
            running += counts[index] - counts[index - width]
            if running > peak:
                peak, peak_end = running, index + 1
        result["peak_per_second_%gs" % window] = peak / window
        # When the busiest window began, in seconds from the start of the run.
        result["peak_at_%gs" % window] = (peak_end - width) * RATE_BUCKET_SECONDS
    return result


def request_rates(before: dict[str, Any], after: dict[str, Any], started: float, finished: float
                  ) -> dict[str, dict[str, float]]:
    """{"aws <region>" / "k8s <cluster>": rates} for the run."""
    result = {}
    for region, times in sorted(after["aws_call_times"].items()):
        result["aws " + region] = rates(before["aws_call_times"].get(region, {}), times, started, finished)
    for name, cluster in sorted(after["clusters"].items()):
        result["k8s " + name] = rates(before["clusters"][name]["k8s_request_times"], cluster["k8s_request_times"],
                                      started, finished)
    return {key: value for key, value in result.items() if value["requests"]}


def run_fleet(sandbox, forks: int, budgets: dict[str, Any]) -> dict[str, Any]:
    directory = sandbox.state_dir / "fleet"
    (directory / "inventory").mkdir(parents=True, exist_ok=True)
    (directory / "inventory" / "fleet.eks_nodegroups.yml").write_text(
        "plugin: eksops.nodegroup.eks_nodegroups\nregions: [us-west-2, eu-west-1]\n")
    report_path = directory / "fleet-report.json"
    command = [str(BIN_DIR / "ansible-playbook"), "-i", str(directory / "inventory"), str(PLAYBOOK),
               "--forks", str(forks), "-e", json.dumps({**FLEET_VARS, **budgets, "fleet_report_path": str(report_path)})]
    # The budgets also in the environment, as AWX would inject them for the whole job: the inventory plugin, which
    # runs before the playbook's variables exist, reads them there.
    env = ansible_env(sandbox, EKSOPS_REQUEST_BUDGET_DIR=str(directory / "budgets"),
                      **{"EKSOPS_%s" % name.upper(): str(value) for name, value in budgets.items()})
    before = sandbox.report()
    started = time.time()
    completed = subprocess.run(command, env=env, cwd=REPO_ROOT, capture_output=True, text=True,
                               timeout=RUN_TIMEOUT, check=False)
    finished = time.time()
    after = sandbox.report()
    if completed.returncode != 0 or not report_path.exists():
        raise RuntimeError("the fleet run failed (%d):\n%s" % (completed.returncode, completed.stdout[-4000:]))
    report = json.loads(report_path.read_text())
    fleet_waves = waves(report)
    ideal = sum(wave["slowest_seconds"] for wave in fleet_waves)
    return {"forks": forks, "budgets": budgets or "defaults", "seconds": finished - started, "status": report["status"],
            "waves": fleet_waves, "sum_of_slowest": ideal, "ratio": (finished - started) / ideal,
            "first_row_started_after": epoch(report["rows"][0]["started_at"]) - started,
            "rates": request_rates(before, after, started, finished),
            "rows": [{key: row[key] for key in ("host", "wave", "status", "started_at", "finished_at", "total_seconds",
                                                "phase_seconds")} for row in report["rows"]],
            "pods_lost": sum(len(cluster["pods_lost"]) for cluster in after["clusters"].values()),
            "pdb_violations": sum(len(cluster["pdb_violations"]) for cluster in after["clusters"].values())}


def print_results(name: str, result: dict[str, Any]) -> None:
    print(f"\n{name}: forks {result['forks']}, budgets {result['budgets']}: {result['status']}, "
          f"{result['seconds']:.1f} s against a sum of slowest node groups of {result['sum_of_slowest']:.1f} s: "
          f"ratio {result['ratio']:.3f} (goal <= {GOAL}); the first node group started "
          f"{result['first_row_started_after']:.1f} s after the start; pods lost {result['pods_lost']}, "
          f"PDB violations {result['pdb_violations']}")
    print_table(["wave", "node groups", "slowest", "its seconds", "wave's span s"],
                [[wave["wave"], wave["nodegroups"], wave["slowest"], wave["slowest_seconds"], wave["span_seconds"]]
                 for wave in result["waves"]])
    print()
    print_table(["requests to", "requests", "mean /s", "peak /s (1 s)", "at s", "peak /s (10 s)", "at s"],
                [[key, value["requests"], value["mean_per_second"], value["peak_per_second_1s"], value["peak_at_1s"],
                  value["peak_per_second_10s"], value["peak_at_10s"]] for key, value in result["rates"].items()])


def parse_config(text: str) -> tuple[int, str]:
    forks, _colon, budgets = text.partition(":")
    if not forks.startswith("forks") or not forks[5:].isdigit() or budgets not in BUDGETS:
        raise ValueError(f"{text}: expected forks<N>:{'|'.join(BUDGETS)}")
    return int(forks[5:]), budgets


def main() -> int:
    parser = argument_parser(__doc__.split("\n", 1)[0], "fleet")
    parser.add_argument("--configs", nargs="+", default=["forks3:budgets", "forks3:unbounded", "forks3:tight"],
                        help="forks<N>:budgets (the request budgets' defaults), forks<N>:unbounded (none) or "
                        "forks<N>:tight (AWS 2, Kubernetes 5 per second), run in turn")
    args = parser.parse_args()
    try:
        configs = [(text, *parse_config(text)) for text in args.configs]
    except ValueError as exc:
        parser.error(str(exc))
    results = {}
    for name, forks, budgets in configs:
        print(f"{name}: starting a sandbox...", file=sys.stderr)
        with running_sandbox_of_whole_fleet() as sandbox:
            results[name] = run_fleet(sandbox, forks, BUDGETS[budgets])
        print_results(name, results[name])
        write_json(args.json, {"configs": results, "goal_ratio": GOAL})  # after each: a long run keeps what it has
    failed = [name for name, result in results.items()
              if result["status"] != "succeeded" or result["pods_lost"] or result["pdb_violations"]]
    return 1 if failed else 0


def running_sandbox_of_whole_fleet():
    directory = REPO_ROOT / "build" / "benchmarks"
    directory.mkdir(parents=True, exist_ok=True)
    return running_sandbox(whole_fleet_scenario(directory))


if __name__ == "__main__":
    sys.exit(main())
