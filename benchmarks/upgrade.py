# -*- coding: utf-8 -*-
# Copyright: Contributors to the eksops.nodegroup project
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""An upgrade on the sandbox through the collection's playbooks, against the ideal time of the same schedule
(docs/performance.md, "The ideal schedule").

For each scenario (bench_upgrade6, bench_upgrade30, bench_upgrade100: N = 6, 30, 100; about 30 pods per node) and
each configuration (rolling with max_unavailable M: `rolling:M`, run once per schedule of --schedules, SPEC B1;
surge with max_surge S and max_unavailable U: `surge:S,U`) a fresh sandbox is started, the playbook upgrades the
group to the scenario's other AMI, and the script prints: wall time, ideal time, their ratio, orchestration
overhead per replaced node, Kubernetes requests per evicted pod (requests of the collection's user agents in the
sandbox report), AWS calls per replaced node, the peak RSS of the controller (the largest process of the
ansible-playbook run) and of the sandbox, pods evicted or deleted per pod that was on an old node (issue 11 item 1:
1.00 is each pod moved once), whether each AZ ends with the nodes it started with, and whether the end state is
clean (no pod lost, no PDB violated).

    .venv/bin/python benchmarks/upgrade.py [--scenarios bench_upgrade6,bench_upgrade30]
        [--configs rolling:1 rolling:10 surge:5,0] [--schedules once eks] [--post-drain-wait 1] [--json PATH]
"""

from __future__ import annotations

import math
import re
import sys
import time
from collections import Counter
from typing import Any

from common import (argument_parser, by_verb, counts_since, k8s_requests_by_agent, print_table, running_sandbox,
                    sandbox_peak_rss_mib, scenario_path, write_json)
from eks_sandbox.kube.pods import QUICK_STOP_SECONDS
from eks_sandbox.scenario.loader import load_scenario
from upgrade_run import SURGE_PLAYBOOK, GroupState, ami_pair, end_state_problems, run_upgrade, workers_asg

from ansible_collections.eksops.nodegroup.plugins.module_utils.plan.parallelism import surge_steps

COLLECTION_AGENT = "eksops.nodegroup/"
SCALE_DOWN_MARKER = "Remove the surplus nodes, restore the group and clear the journal"
UPGRADE_MARKER = "Replace the old nodes"
RUN_TIMEOUT = 1800
# Issue 11's goals at N = 30, rolling:1, default schedule.
GOAL_RATIO = 1.10
GOAL_OVERHEAD_SECONDS = 1.0
GOAL_MOVES_PER_OLD_POD = 1.0
GOAL_REQUESTS_PER_POD = 4.0


# ------------------------------------------------------------------------------------------------------------
# The ideal schedule
# ------------------------------------------------------------------------------------------------------------

def _scaled(value, total, round_up=True):
    """A PDB field (int or "NN%") as a pod count, rounded up as the disruption controller does."""
    if isinstance(value, str) and value.endswith("%"):
        exact = int(value[:-1]) * total / 100
        return math.ceil(exact) if round_up else math.floor(exact)
    return int(value)


def disruptions_allowed(workload) -> float:
    """How many of the workload's pods may be down at once when all are healthy (inf: no PDB)."""
    pdb = workload["pdb"]
    if not pdb or workload["kind"] != "Deployment":
        return math.inf
    replicas = workload["replicas"]
    if pdb["max_unavailable"] is not None:
        return max(0, _scaled(pdb["max_unavailable"], replicas))
    return max(0, replicas - _scaled(pdb["min_available"], replicas))


def stop_seconds(workload, timings) -> float:
    """How long the sandbox's kubelet takes to stop one of the workload's pods once it is evicted."""
    scaled = workload["termination_grace_period_seconds"] * timings["grace_period_scale"]
    return scaled if workload["ignore_sigterm"] else min(scaled, QUICK_STOP_SECONDS)


def reaction_per_round(before: dict | None, after: dict | None) -> dict[str, Any]:
    """The sandbox's own reaction time per disruption-budget round during a run, as it recorded it (the report's
    `pdb_rounds`, running totals, taken before and after the run): {"rounds": n, "mean": seconds per round over
    every budget, "by_workload": {(namespace, name): seconds per round of that workload's budget}}."""
    def totals(report, pdb):
        entry = ((report or {}).get("by_pdb") or {}).get(pdb) or {}
        return entry.get("rounds", 0), entry.get("reaction_seconds", 0.0)

    by_workload, rounds, seconds = {}, 0, 0.0
    for pdb in ((after or {}).get("by_pdb") or {}):
        (rounds_before, before_seconds), (rounds_after, after_seconds) = totals(before, pdb), totals(after, pdb)
        if rounds_after > rounds_before:
            namespace, name = pdb.split("/", 1)
            by_workload[(namespace, name)] = (after_seconds - before_seconds) / (rounds_after - rounds_before)
            rounds += rounds_after - rounds_before
            seconds += after_seconds - before_seconds
    return {"rounds": rounds, "mean": seconds / rounds if rounds else 0.0, "by_workload": by_workload}


def _mean_reaction(before: dict | None, after: dict | None, count_name: str) -> float:
    """The sandbox's mean reaction per event between two of its running-total reports (``count_name``: the report's
    count of those events), 0 when none happened."""
    def totals(report):
        return (report or {}).get(count_name, 0), (report or {}).get("reaction_seconds", 0.0)

    (count_before, seconds_before), (count_after, seconds_after) = totals(before), totals(after)
    return (seconds_after - seconds_before) / (count_after - count_before) if count_after > count_before else 0.0


def reaction_per_stop(before: dict | None, after: dict | None) -> dict[str, Any]:
    """The sandbox's own reaction per pod it stopped during a run, as it recorded it (the report's `pod_stops`,
    running totals, taken before and after the run): the kubelet acting on its next pass after the stop time.
    {"stop": mean seconds per stop, "stop_by_node": {node: the reaction to the last stop on that node}}: a drain
    ends with its nodes' last stops, and those are not average ones, since the eviction that starts each came
    right after a pass (the one that gave its budget back), so it waits for nearly a whole pass more."""
    by_node = dict(((after or {}).get("by_node") or {}).items())
    for node, entry in ((before or {}).get("by_node") or {}).items():
        if by_node.get(node) == entry:
            del by_node[node]  # nothing stopped there during the run
    return {"stop": _mean_reaction(before, after, "stops"),
            "stop_by_node": dict((node, entry["last_reaction_seconds"]) for node, entry in by_node.items())}


def reaction_per_boot(before: dict | None, after: dict | None) -> dict[str, Any]:
    """The sandbox's own reaction per node boot during a run, as it recorded it (the report's `node_boots`, taken
    before and after the run): EC2 and the kubelet acting on their passes beyond instance_pending_seconds +
    node_boot_seconds. {"boot": mean seconds per boot, "boot_by_instance": {instance id: seconds}}."""
    known = set(((before or {}).get("by_instance") or {}))
    return {"boot": _mean_reaction(before, after, "boots"),
            "boot_by_instance": dict((instance_id, seconds) for instance_id, seconds
                                     in ((after or {}).get("by_instance") or {}).items() if instance_id not in known)}


NO_REACTION = {"rounds": 0, "mean": 0.0, "by_workload": {}, "stop": 0.0, "stop_by_node": {}, "boot": 0.0,
               "boot_by_instance": {}}


def boot_reaction(reaction, instance_ids=()) -> float:
    """The sandbox's reaction to the slowest boot of ``instance_ids`` (launched together, waited for together), as
    recorded, else the run's mean per boot."""
    recorded = [reaction.get("boot_by_instance", {}).get(i) for i in instance_ids]
    recorded = [seconds for seconds in recorded if seconds is not None]
    return max(recorded) if recorded else reaction.get("boot", 0.0)


def stop_reaction(reaction, nodes=()) -> float:
    """The sandbox's reaction to the last pod stop of a drain of ``nodes``: the latest of their last stops as
    recorded, else the run's mean per stop."""
    recorded = [reaction.get("stop_by_node", {}).get(node) for node in nodes]
    recorded = [seconds for seconds in recorded if seconds is not None]
    return max(recorded) if recorded else reaction.get("stop", 0.0)


def ideal_drain_seconds(pods_per_workload: Counter, scenario, reaction=None, nodes=()) -> float:
    """Draining a set of nodes (``nodes``: their names) holding these pods: budgets release d pods per round, a
    round lasts until the replacements are Ready (pod_start_seconds) and the sandbox has reacted (its recorded
    reaction per round for that budget, else the run's mean per round: see reaction_per_round), and the drain ends
    when the last round's pods have stopped (their stop time, and the sandbox's recorded reaction to the last stop
    on those nodes: stop_reaction)."""
    reaction = reaction or NO_REACTION
    workloads = {(w["namespace"], w["name"]): w for w in scenario["workloads"]}
    timings = scenario["timings"]
    waited = 0.0
    stop = 0.0
    for key, count in pods_per_workload.items():
        workload = workloads[key]
        allowed = disruptions_allowed(workload)
        rounds = 1 if allowed == math.inf else math.ceil(count / max(allowed, 1))
        per_round = timings["pod_start_seconds"] + reaction["by_workload"].get(key, reaction["mean"])
        waited = max(waited, (rounds - 1) * per_round)
        stop = max(stop, stop_seconds(workload, timings))
    if not pods_per_workload:
        return 0.0
    return waited + stop + stop_reaction(reaction, nodes)


def ideal_schedule(scenario, batches, surplus_batch, post_drain_wait, reaction=None, batch_nodes=None,
                   surplus_nodes=(), surge_instances=()) -> dict[str, float]:
    """Rolling: scale-up (launch + boot, and the sandbox's reaction to the slowest boot of ``surge_instances``);
    every batch (drain + post-drain wait), then one EC2 shutdown at the end of the phase; the scale-down batch
    (drain + post-drain wait + shutdown) when it removes nodes. ``batch_nodes``: each batch's node names,
    ``surplus_nodes`` the scale-down's (for stop_reaction)."""
    timings = scenario["timings"]
    shutdown = timings["instance_shutdown_seconds"]
    batch_nodes = batch_nodes or [()] * len(batches)
    phases = {
        "scale_up": timings["instance_pending_seconds"] + timings["node_boot_seconds"]
        + boot_reaction(reaction or NO_REACTION, surge_instances),
        "upgrade": _steps_seconds(scenario, [(0, True, batch, nodes) for batch, nodes in zip(batches, batch_nodes)],
                                  post_drain_wait, reaction),
        "scale_down": ideal_drain_seconds(surplus_batch, scenario, reaction, surplus_nodes) + post_drain_wait
        + shutdown if surplus_batch is not None else 0.0,
    }
    phases["total"] = sum(phases.values())
    return phases


def ideal_surge_schedule(scenario, steps, post_drain_wait, reaction=None) -> dict[str, float]:
    """Surge: each step (launched count, replaced count, pods of its old nodes, their node names) launches and
    boots its new nodes (when it launches any), then drains its old nodes and waits; the last replaced nodes' EC2
    shutdown ends the phase unless later launches take longer. There is no scale-up or surplus phase."""
    upgrade = _steps_seconds(scenario, [(launched, replaced > 0, pods, nodes)
                                        for launched, replaced, pods, nodes in steps], post_drain_wait, reaction)
    return {"scale_up": 0.0, "upgrade": upgrade, "scale_down": 0.0, "total": upgrade}


def _steps_seconds(scenario, steps, post_drain_wait, reaction) -> float:
    """Steps (launched count, whether it replaces nodes, pods of its old nodes, their names) in turn: a launch
    waits for the boot, a replacement for the drain and the post-drain wait. The EC2 shutdown after Auto Scaling
    accepted a termination holds up nothing but the end of the phase, which waits for the last terminated
    instances."""
    timings = scenario["timings"]
    boot = timings["instance_pending_seconds"] + timings["node_boot_seconds"] + (reaction or NO_REACTION).get("boot", 0.0)
    now, gone = 0.0, 0.0
    for launched, replaces, pods, nodes in steps:
        now += boot if launched else 0.0
        if replaces:
            now += ideal_drain_seconds(pods, scenario, reaction, nodes) + post_drain_wait
            gone = now + timings["instance_shutdown_seconds"]
    return max(now, gone)


# ------------------------------------------------------------------------------------------------------------
# What the sandbox holds
# ------------------------------------------------------------------------------------------------------------

def node_contents(sandbox, node_names: dict[str, str] | None = None) -> dict[str, Counter]:
    """{instance id: Counter of (namespace, workload) for the evictable pods of its node}; ``node_names`` receives
    instance id -> node name."""
    core = sandbox.core_v1()
    instance_of = {node.metadata.name: node.spec.provider_id.rsplit("/", 1)[-1]
                   for node in core.list_node().items if node.spec.provider_id}
    if node_names is not None:
        node_names.update((instance_id, name) for name, instance_id in instance_of.items())
    contents: dict[str, Counter] = {}
    for pod in core.list_pod_for_all_namespaces().items:
        owners = pod.metadata.owner_references or []
        if pod.spec.node_name not in instance_of or any(o.kind == "DaemonSet" for o in owners) \
                or pod.metadata.deletion_timestamp:
            continue
        app = (pod.metadata.labels or {}).get("app")
        contents.setdefault(instance_of[pod.spec.node_name], Counter())[(pod.metadata.namespace, app)] += 1
    return contents


class TaskClock:
    """Time per playbook task, from the moment each `TASK [...]` header is printed to the next one; tasks that
    differ only by their batch or node label are added up."""

    HEADER = re.compile(r"^TASK \[(?:[^:\]]+ : )?(?P<name>[^\]]+)\]")

    def __init__(self):
        self.seconds: Counter = Counter()
        self.count: Counter = Counter()
        self._current = None

    def line(self, text):
        match = self.HEADER.match(text)
        if match or text.startswith("PLAY RECAP"):
            self._close()
        if match:
            name = re.sub(r"\s*\d+/\d+$", "", match.group("name").split(":", 1)[0].strip())
            self._current = (name, time.monotonic())
            self.count[name] += 1

    def _close(self):
        if self._current is not None:
            name, started = self._current
            self.seconds[name] += time.monotonic() - started
            self._current = None


def batch_pods(contents, instance_ids) -> Counter:
    total: Counter = Counter()
    for instance_id in instance_ids:
        total.update(contents.get(instance_id, Counter()))
    return total


# ------------------------------------------------------------------------------------------------------------

class Config:
    """One upgrade configuration: `rolling:M` (max_unavailable M) or `surge:S,U` (max_surge S, max_unavailable U);
    a rolling one runs with ``schedule`` (SPEC B1: once or eks), which the surge playbook does not take."""

    def __init__(self, text: str, schedule: str | None = None):
        strategy, dummy, numbers = text.partition(":")
        values = [int(v) for v in numbers.split(",") if v.strip()]
        if strategy == "rolling" and len(values) == 1 and values[0] >= 1:
            self.max_surge, self.max_unavailable = None, values[0]
        elif strategy == "surge" and len(values) == 2 and min(values) >= 0 and sum(values) > 0:
            self.max_surge, self.max_unavailable = values
        else:
            raise ValueError(f"not a configuration: {text!r} (rolling:M or surge:S,U)")
        self.strategy = strategy
        self.schedule = schedule if strategy == "rolling" else None
        self.label = "%s %s" % (text, self.schedule) if self.schedule else text

    def extra_vars(self) -> dict[str, Any]:
        if self.strategy == "rolling":
            return {"max_unavailable": self.max_unavailable, **({"schedule": self.schedule} if self.schedule else {})}
        return {"max_surge": self.max_surge, "max_unavailable": self.max_unavailable}


def per_az(sandbox) -> dict[str, int]:
    """The group's live instances per Availability Zone."""
    return dict(Counter(i["AvailabilityZone"] for i in workers_asg(sandbox)["Instances"]
                        if not i["LifecycleState"].startswith("Terminat")))


def ideal_for(config: Config, scenario, report, contents_before, at_scale_down, post_drain_wait, reaction=None,
              node_names=None, surge_instances=()):
    """The ideal schedule of what the run did, and the pods that had to move (see ideal_schedule). ``node_names``:
    instance id -> node name, of the nodes before the run and at the scale-down; ``surge_instances``: the instances
    the scale-up launched."""
    replaced = report["replaced_instances"]
    node_names = node_names or {}

    def nodes(instance_ids):
        return tuple(node_names[i] for i in instance_ids if i in node_names)

    if config.strategy == "surge":
        steps, offset = [], 0
        for step in surge_steps(len(replaced), config.max_surge, config.max_unavailable):
            ids = replaced[offset:offset + step["replace"]]
            steps.append((step["launch"], step["replace"], batch_pods(contents_before, ids), nodes(ids)))
            offset += step["replace"]
        moved = sum(sum(pods.values()) for _launched, _replaced, pods, _nodes in steps)
        return ideal_surge_schedule(scenario, steps, post_drain_wait, reaction), moved
    size = config.max_unavailable
    chunks = [replaced[i:i + size] for i in range(0, len(replaced), size)]
    batches = [batch_pods(contents_before, ids) for ids in chunks]
    surplus = batch_pods(at_scale_down, report["surplus_removed"]) if report["surplus_removed"] else None
    moved = sum(sum(batch.values()) for batch in batches) + (sum(surplus.values()) if surplus else 0)
    return ideal_schedule(scenario, batches, surplus, post_drain_wait, reaction, [nodes(ids) for ids in chunks],
                          nodes(report["surplus_removed"]), surge_instances), moved


def benchmark(scenario_name: str, config: Config, post_drain_wait: float) -> dict[str, Any]:
    path = scenario_path(scenario_name)
    scenario = load_scenario(str(path))
    with running_sandbox(path) as sandbox:
        _current, target = ami_pair(sandbox)
        sizes_before = GroupState(workers_asg(sandbox)).sizes
        azs_before = per_az(sandbox)
        node_names: dict[str, str] = {}
        contents_before = node_contents(sandbox, node_names)
        at_scale_down: dict[str, Any] = {}
        instances_before = set(i["InstanceId"] for i in workers_asg(sandbox)["Instances"])
        surge_instances: set[str] = set()

        tasks = TaskClock()

        def on_line(line):
            tasks.line(line)
            if UPGRADE_MARKER in line and not surge_instances:
                surge_instances.update(set(i["InstanceId"] for i in workers_asg(sandbox)["Instances"])
                                       - instances_before)
            if SCALE_DOWN_MARKER in line and not at_scale_down:
                at_scale_down.update(node_contents(sandbox, node_names))

        before = sandbox.report()
        print(f"{scenario['name']}: upgrading {sizes_before[2]} nodes, {config.label}...", file=sys.stderr)
        run = run_upgrade(sandbox, {"cluster_name": scenario["cluster"]["name"], "nodegroup_name": "workers",
                                    "image_id": target, "post_drain_wait": post_drain_wait, **config.extra_vars()},
                          RUN_TIMEOUT, on_line=on_line,
                          **({"playbook": SURGE_PLAYBOOK} if config.strategy == "surge" else {}))
        after = sandbox.report()
        sandbox_rss = sandbox_peak_rss_mib(sandbox)
        problems = end_state_problems(sandbox, target, sizes_before) if run.returncode == 0 else ["run failed"]
        azs_after = per_az(sandbox)
    if run.returncode != 0 or run.report is None:
        raise RuntimeError(f"the upgrade failed (exit {run.returncode}):\n{run.output[-4000:]}")

    report = run.report
    # The sandbox's own reaction per budget round and per pod stop, as it recorded them during this run (issue 11
    # item 4).
    reaction = dict(reaction_per_round(before.get("pdb_rounds"), after.get("pdb_rounds")),
                    **reaction_per_stop(before.get("pod_stops"), after.get("pod_stops")),
                    **reaction_per_boot(before.get("node_boots"), after.get("node_boots")))
    ideal, moved = ideal_for(config, scenario, report, contents_before, at_scale_down, post_drain_wait, reaction,
                             node_names, sorted(surge_instances))
    without_reaction, _moved = ideal_for(config, scenario, report, contents_before, at_scale_down, post_drain_wait)
    rounds_only, _moved = ideal_for(config, scenario, report, contents_before, at_scale_down, post_drain_wait,
                                    dict(reaction, stop=0.0, stop_by_node={}, boot=0.0, boot_by_instance={}))
    without_boots, _moved = ideal_for(config, scenario, report, contents_before, at_scale_down, post_drain_wait,
                                      dict(reaction, boot=0.0, boot_by_instance={}), node_names)

    k8s = k8s_requests_by_agent({"k8s_requests": counts_since(before["k8s_requests"], after["k8s_requests"])},
                                COLLECTION_AGENT)
    aws = counts_since(before["aws_calls"], after["aws_calls"])
    # `moved`: the pods that had to leave, those of the replaced nodes before the run and of the surplus nodes at
    # the scale-down (the upgrade report's own count is shown too).
    replaced_count = len(report["replaced_instances"])
    return {
        "scenario": scenario["name"], "nodes": sizes_before[2], "config": config.label,
        "strategy": config.strategy, "max_surge": config.max_surge, "max_unavailable": config.max_unavailable,
        "post_drain_wait": post_drain_wait, "wall_seconds": run.seconds, "phase_seconds": report["phase_seconds"],
        "ideal_seconds": ideal, "ratio": run.seconds / ideal["total"],
        "pdb_rounds": {"rounds": reaction["rounds"], "reaction_seconds_per_round": reaction["mean"],
                       "by_workload": {"/".join(key): value for key, value in reaction["by_workload"].items()},
                       "charged_to_ideal_seconds": rounds_only["total"] - without_reaction["total"]},
        "pod_stops": {"reaction_seconds_per_stop": reaction["stop"],
                      "last_stop_reaction_seconds_by_node": reaction["stop_by_node"],
                      "charged_to_ideal_seconds": without_boots["total"] - rounds_only["total"]},
        "node_boots": {"reaction_seconds_per_boot": reaction["boot"],
                       "surge_reaction_seconds": boot_reaction(reaction, sorted(surge_instances)),
                       "charged_to_ideal_seconds": ideal["total"] - without_boots["total"]},
        "overhead_per_replaced_node_seconds": (run.seconds - ideal["total"]) / replaced_count,
        "replaced_nodes": replaced_count, "surplus_removed": len(report["surplus_removed"]),
        "pods_moved": moved, "pods_evicted_in_upgrade_report": report["pods_evicted"],
        "disruptions_per_old_pod": report.get("disruptions_per_old_pod"),
        "pods_on_old_nodes": report.get("pods_on_old_nodes"),
        "per_az_before": azs_before, "per_az_after": azs_after,
        "pdb_wait_seconds": report.get("pdb_wait_seconds"),
        "k8s_requests": sum(k8s.values()), "k8s_requests_by_verb": by_verb(k8s),
        "k8s_requests_detail": {" ".join(key): count for key, count in sorted(k8s.items())},
        "k8s_requests_per_evicted_pod": sum(k8s.values()) / moved if moved else None,
        "aws_calls": sum(aws.values()), "aws_calls_detail": aws,
        "aws_calls_per_replaced_node": sum(aws.values()) / replaced_count,
        "controller_peak_rss_mib": run.peak_rss_mib, "sandbox_peak_rss_mib": sandbox_rss,
        "evictions_accepted_by_server": k8s[("create", "pods/eviction", "201")],
        "end_state_problems": problems,
        "task_seconds": dict(tasks.seconds.most_common()), "task_count": dict(tasks.count),
    }


def main():
    parser = argument_parser(__doc__.split("\n", 1)[0], "upgrade")
    parser.add_argument("--scenarios", default="bench_upgrade6",
                        help="comma-separated scenario names or files (default: %(default)s; bench_upgrade30 is N=30, "
                             "bench_upgrade100 N=100)")
    parser.add_argument("--configs", nargs="+", default=["rolling:1"], metavar="CONFIG",
                        help="rolling:M and/or surge:S,U (default: %(default)s)")
    parser.add_argument("--schedules", nargs="+", default=["once", "eks"], choices=["once", "eks"],
                        help="the schedules each rolling configuration runs with, side by side (default: %(default)s)")
    parser.add_argument("--post-drain-wait", type=float, default=1)
    args = parser.parse_args()
    if args.post_drain_wait != int(args.post_drain_wait):
        parser.error("--post-drain-wait must be whole seconds (the playbook takes an integer)")
    try:
        configs = [Config(text, schedule) for text in args.configs
                   for schedule in (args.schedules if text.startswith("rolling") else [None])]
    except ValueError as exc:
        parser.error(str(exc))

    runs = [benchmark(name.strip(), config, int(args.post_drain_wait))
            for name in args.scenarios.split(",") if name.strip() for config in configs]
    print(f"\nUpgrades, post_drain_wait {int(args.post_drain_wait)} s\n")
    print_table(["N", "config", "wall s", "ideal s", "ratio", "overhead s/node", "k8s req/pod", "AWS calls/node",
                 "ctl RSS MiB", "sandbox RSS MiB", "pods moved", "moves/old pod", "AZs as before", "clean"], [
        [r["nodes"], r["config"], r["wall_seconds"], r["ideal_seconds"]["total"], r["ratio"],
         r["overhead_per_replaced_node_seconds"], r["k8s_requests_per_evicted_pod"], r["aws_calls_per_replaced_node"],
         r["controller_peak_rss_mib"], r["sandbox_peak_rss_mib"], r["pods_moved"], r["disruptions_per_old_pod"],
         "yes" if r["per_az_after"] == r["per_az_before"] else "%s, was %s" % (r["per_az_after"], r["per_az_before"]),
         "yes" if not r["end_state_problems"] else "; ".join(r["end_state_problems"])[:80]]
        for r in runs])
    print(f"\ngoals: ratio <= {GOAL_RATIO} and overhead <= {GOAL_OVERHEAD_SECONDS} s/node at N=30 rolling:1 once; "
          f"{GOAL_MOVES_PER_OLD_POD:.2f} moves per old pod with schedule once; "
          f"<= {GOAL_REQUESTS_PER_POD:g} requests per evicted pod at N=100")
    print("\nby phase (measured / ideal, s):")
    print_table(["N", "config", "setup", "scale_up", "upgrade", "scale_down", "k8s requests by verb"], [
        [r["nodes"], r["config"], r["phase_seconds"].get("setup"),
         "%.1f / %.1f" % (r["phase_seconds"].get("scale_up", 0), r["ideal_seconds"]["scale_up"]),
         # The surge strategy's phase is called surge_upgrade.
         "%.1f / %.1f" % (r["phase_seconds"].get("upgrade", r["phase_seconds"].get("surge_upgrade", 0)),
                          r["ideal_seconds"]["upgrade"]),
         "%.1f / %.1f" % (r["phase_seconds"].get("scale_down", 0), r["ideal_seconds"]["scale_down"]),
         ", ".join(f"{verb} {count}" for verb, count in r["k8s_requests_by_verb"].items())]
        for r in runs])
    for r in runs:
        print(f"\nN={r['nodes']} {r['config']}: the slowest tasks (all runs of a task added up; the drains include "
              f"the budgets' pacing and post_drain_wait)")
        print_table(["task", "runs", "seconds"], [[name, r["task_count"][name], seconds]
                                                  for name, seconds in list(r["task_seconds"].items())[:8]])
        print(f"pods that had to move: {r['pods_moved']}; evictions the server accepted: "
              f"{r['evictions_accepted_by_server']}; pods the upgrade report counts as evicted: "
              f"{r['pods_evicted_in_upgrade_report']}")
        rounds = r["pdb_rounds"]
        print(f"disruption-budget rounds the sandbox recorded: {rounds['rounds']}, its own reaction "
              f"{rounds['reaction_seconds_per_round']:.3f} s per round beyond pod_start_seconds (by budget: "
              + (", ".join(f"{name} {seconds:.3f}" for name, seconds in rounds["by_workload"].items()) or "none")
              + f"); the ideal charges {rounds['charged_to_ideal_seconds']:.1f} s for it")
        stops = r["pod_stops"]
        last = list(stops["last_stop_reaction_seconds_by_node"].values())
        print(f"pod stops: the sandbox's own reaction {stops['reaction_seconds_per_stop']:.3f} s per stop beyond the "
              f"stop time, {sum(last) / len(last) if last else 0:.3f} s for a node's last stop; the ideal charges "
              f"{stops['charged_to_ideal_seconds']:.1f} s for it (each drain's last stop)")
        boots = r["node_boots"]
        print(f"node boots: the sandbox's own reaction {boots['reaction_seconds_per_boot']:.3f} s per boot beyond "
              f"pending and boot, {boots['surge_reaction_seconds']:.3f} s for the scale-up's slowest; the ideal "
              f"charges {boots['charged_to_ideal_seconds']:.1f} s for it")
    write_json(args.json, {"runs": runs})
    # An upgrade that failed or left the group unlike a clean run's is a benchmark that failed (make benchmarks-smoke).
    sys.exit(1 if any(r["end_state_problems"] for r in runs) else 0)


if __name__ == "__main__":
    main()
