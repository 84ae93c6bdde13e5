# -*- coding: utf-8 -*-
# Copyright: Contributors to the eksops.nodegroup project
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Fault soak: upgrades in a row on one sandbox under steady faults, each checked for the clean end state; then
runs SIGKILLed at a random moment and rerun with the same command, each checked for convergence.

Default scenario: tests/sandbox/scenarios/soak_faults.yaml (10 % Kubernetes 429/500/503, watches dropped every
20 s, 10 % AWS throttling). Each upgrade targets the AMI the nodes do not run yet, so the runs alternate between
the scenario's two AMIs. Clean end state (issue 4): every node on the target AMI and launch template version,
sizes as before, no cordoned or NotReady node, no suspended process, no journal tag, no pod lost, no PDB
violated during the run. A run that fails is rerun with the same command (up to 3 times, as the person on call
would) before the next run starts, so one failure does not fail every run after it; it still counts as not clean.

A killed run keeps its lease on the group until it ends (issue 10 item 21: at most LEASE_SECONDS after its last
renewal); the rerun waits for that first, as the person on call does when the rerun says UpgradeInProgress.

    .venv/bin/python benchmarks/soak.py [--playbook rolling|surge] [--runs 10] [--kills 20] [--scenario soak_faults]
        [--seed 0] [--json PATH]
"""

from __future__ import annotations

import datetime
import random
import sys
import time

from common import argument_parser, print_table, running_sandbox, scenario_path, write_json
from eks_sandbox.scenario.loader import load_scenario
from upgrade_run import PLAYBOOK, SURGE_PLAYBOOK, GroupState, ami_pair, end_state_problems, run_upgrade, workers_asg

RUN_TIMEOUT = 900
# A kill lands uniformly in [KILL_MIN_SECONDS, KILL_WINDOW_SHARE x the first upgrade's playbook time]: runs
# vary, and a kill after the end tests nothing.
KILL_MIN_SECONDS = 2.0
KILL_WINDOW_SHARE = 0.9
# After a run that failed, the soak reruns the same job (as the person on call would) up to this many times so
# the next run starts from a finished upgrade; a failed run still counts as not clean.
RECOVERY_RERUNS = 3
PLAYBOOKS = {"rolling": PLAYBOOK, "surge": SURGE_PLAYBOOK}
LEASE_TAG = "eksops.nodegroup/lease"


def wait_for_lease_to_end(sandbox):
    """Sleep until the lease a killed run left on the group has ended (its tag: "<id> <expiry ISO 8601>")."""
    for tag in workers_asg(sandbox).get("Tags", []):
        if tag["Key"] == LEASE_TAG:
            expiry = datetime.datetime.strptime(tag["Value"].split(" ", 1)[1], "%Y-%m-%dT%H:%M:%SZ")
            left = (expiry.replace(tzinfo=datetime.timezone.utc) - datetime.datetime.now(datetime.timezone.utc))
            time.sleep(max(0.0, left.total_seconds()) + 1.0)


def upgrade_vars(scenario, target, post_drain_wait):
    return {"cluster_name": scenario["cluster"]["name"], "nodegroup_name": "workers", "image_id": target,
            "post_drain_wait": post_drain_wait}


def one_run(sandbox, scenario, sizes, post_drain_wait, playbook, kill_after=None):
    """An upgrade (killed after kill_after s and rerun when given); the tally row for it."""
    baseline = sandbox.report()
    _current, target = ami_pair(sandbox)
    started = time.monotonic()
    row = {"target": target, "killed_at": None}
    extra_vars = upgrade_vars(scenario, target, post_drain_wait)
    if kill_after is not None:
        killed = run_upgrade(sandbox, extra_vars, RUN_TIMEOUT, kill_after=kill_after, playbook=playbook)
        row["killed_at"] = round(kill_after, 1) if killed.killed else None
        if killed.killed:
            wait_for_lease_to_end(sandbox)
        # A run that ended before its kill: did it succeed (the rerun is then a no-op) or fail on its own?
        row["first_run"] = None if killed.killed else {
            "returncode": killed.returncode, "seconds": killed.seconds,
            "error": ((killed.report or {}).get("error") or {}).get("summary")}
    run = run_upgrade(sandbox, extra_vars, RUN_TIMEOUT, playbook=playbook)
    row.update(seconds=time.monotonic() - started, last_run_seconds=run.seconds, returncode=run.returncode,
               status=(run.report or {}).get("status"))
    if run.returncode != 0:
        error = (run.report or {}).get("error") or {}
        row["problems"] = ["playbook failed: %s" % error.get("summary", run.output[-1500:])]
    else:
        row["problems"] = end_state_problems(sandbox, target, sizes, baseline)
    row["clean"] = not row["problems"]
    return row


def recover(sandbox, scenario, row, post_drain_wait, playbook):
    """Rerun a failed row's job until it succeeds; records how many reruns it took (None: it did not recover)."""
    row["recovery_reruns"] = None
    for attempt in range(1, RECOVERY_RERUNS + 1):
        print(f"  failed; rerunning the same job ({attempt}/{RECOVERY_RERUNS})...", file=sys.stderr)
        wait_for_lease_to_end(sandbox)
        if run_upgrade(sandbox, upgrade_vars(scenario, row["target"], post_drain_wait), RUN_TIMEOUT,
                       playbook=playbook).returncode == 0:
            row["recovery_reruns"] = attempt
            return True
    return False


def soak_rows(sandbox, scenario, sizes, args, rng):
    """The upgrades in a row, then the killed-and-rerun ones; stops early if a failed run cannot be recovered."""
    rows = []

    playbook = PLAYBOOKS[args.playbook]

    def add(kind, kill_after=None):
        row = {"kind": kind, **one_run(sandbox, scenario, sizes, args.post_drain_wait, playbook, kill_after)}
        rows.append(row)
        return row["returncode"] == 0 or recover(sandbox, scenario, row, args.post_drain_wait, playbook)

    for index in range(args.runs):
        print(f"upgrade {index + 1}/{args.runs}...", file=sys.stderr)
        if not add("upgrade"):
            return rows
    window = max(KILL_MIN_SECONDS + 1, KILL_WINDOW_SHARE * rows[0]["last_run_seconds"])
    for index in range(args.kills):
        kill_after = rng.uniform(KILL_MIN_SECONDS, window)
        print(f"kill-and-rerun {index + 1}/{args.kills} (kill after {kill_after:.1f} s)...", file=sys.stderr)
        if not add("kill+rerun", kill_after):
            return rows
    return rows


def main():
    parser = argument_parser(__doc__.split("\n", 1)[0], "soak")
    parser.add_argument("--scenario", default="soak_faults")
    parser.add_argument("--playbook", choices=sorted(PLAYBOOKS), default="rolling",
                        help="upgrade_nodegroup.yml (rolling) or surge_upgrade.yml (default: %(default)s)")
    parser.add_argument("--runs", type=int, default=10, help="upgrades in a row (default: %(default)s)")
    parser.add_argument("--kills", type=int, default=20, help="killed-and-rerun upgrades (default: %(default)s)")
    parser.add_argument("--post-drain-wait", type=int, default=1)
    parser.add_argument("--seed", type=int, default=0, help="seeds the kill moments")
    args = parser.parse_args()
    if args.runs < 1:
        parser.error("--runs must be at least 1: the first run also times the kill window")
    rng = random.Random(args.seed)
    path = scenario_path(args.scenario)
    scenario = load_scenario(str(path))

    with running_sandbox(path) as sandbox:
        sizes = GroupState(workers_asg(sandbox)).sizes
        rows = soak_rows(sandbox, scenario, sizes, args, rng)
        faults = sandbox.report()["faults"]

    print(f"\nSoak of the {args.playbook} playbook on {scenario['name']}: {args.runs} upgrades in a row, "
          f"{args.kills} killed and rerun\n")
    print_table(["#", "kind", "killed at s", "total s", "status", "clean", "reruns to recover", "problems"], [
        [index + 1, row["kind"], row["killed_at"] if row.get("first_run") is None else
         "ended first (exit %d)" % row["first_run"]["returncode"], row["seconds"], row["status"],
         "yes" if row["clean"] else "NO", row.get("recovery_reruns", "-") if not row["clean"] else "-",
         "; ".join(row["problems"])[:100] or None] for index, row in enumerate(rows)])
    for index, row in enumerate(rows):
        if (row.get("first_run") or {}).get("returncode"):
            print(f"run {index + 1}: the run meant to be killed failed on its own: {row['first_run']['error']}")
    upgrades = [row for row in rows if row["kind"] == "upgrade"]
    kills = [row for row in rows if row["kind"] == "kill+rerun"]
    if len(upgrades) < args.runs or len(kills) < args.kills:
        print(f"\nstopped early: run {len(rows)} failed and {RECOVERY_RERUNS} reruns of the same job did not recover")
    tally = {"upgrades_clean": sum(row["clean"] for row in upgrades), "upgrades": args.runs,
             "kills_converged": sum(row["clean"] for row in kills), "kills": args.kills,
             "kills_landed": sum(row["killed_at"] is not None for row in kills)}
    print(f"\nclean: {tally['upgrades_clean']} of {tally['upgrades']} upgrades; converged: {tally['kills_converged']} of "
          f"{tally['kills']} killed-and-rerun ({tally['kills_landed']} kills landed before the run ended)")
    print("faults fired: " + ", ".join(
        f"{f['type']} {f.get('status') or f.get('code') or ''} x{f['fired']}".replace("  ", " ") for f in faults))
    write_json(args.json, {"scenario": str(path), "playbook": args.playbook, "seed": args.seed, "tally": tally, "runs": rows, "faults": faults})
    sys.exit(0 if tally["upgrades_clean"] == tally["upgrades"] and tally["kills_converged"] == tally["kills"] else 1)


if __name__ == "__main__":
    main()
