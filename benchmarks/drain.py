# -*- coding: utf-8 -*-
# Copyright: Contributors to the eksops.nodegroup project
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Draining one node with 110 pods, some paced by PodDisruptionBudgets: node_drain against `kubectl drain`
(and kubernetes.core.k8s_drain when the `ansible` package, which ships it, is installed).

Each tool drains its own fresh sandbox of tests/sandbox/scenarios/bench_drain110.yaml (so every tool starts
from the same state), one after the other. Figures: wall time of the command (for node_drain that includes
starting Ansible; the start-up of `ansible localhost -m ping` is shown for scale), and the Kubernetes requests
the sandbox recorded for the tool's user agent, by verb.

    .venv/bin/python benchmarks/drain.py [--tools node_drain,kubectl,k8s_drain] [--json PATH]
"""

from __future__ import annotations

import importlib.metadata
import shutil
import subprocess
import sys
import time

from common import (argument_parser, by_verb, k8s_requests_by_agent, print_table, running_sandbox, scenario_path,
                    write_json)
from sandbox_helpers import BIN_DIR, ansible_env, run_module

SCENARIO = scenario_path("bench_drain110")
POD_COUNT = 110
DRAIN_TIMEOUT = 400
READY_TIMEOUT = 120
TOOLS = ("node_drain", "kubectl", "k8s_drain")
# Which user agent the sandbox records for each tool's requests.
USER_AGENTS = {"node_drain": "node_drain", "kubectl": "kubectl", "k8s_drain": "OpenAPI-Generator"}


def _wait(condition, what, timeout=READY_TIMEOUT):
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        value = condition()
        if value:
            return value
        time.sleep(0.5)
    raise RuntimeError(f"{what} within {timeout} s")


def loaded_node(sandbox) -> str:
    """Once all 110 pods run on the one `old` node, start an empty `spare` node for them; the old node's name."""
    core = sandbox.core_v1()

    def all_running_on_one_node():
        pods = core.list_pod_for_all_namespaces(label_selector="app in (paced,budgeted,free)").items
        nodes = {pod.spec.node_name for pod in pods}
        if len(pods) == POD_COUNT and len(nodes) == 1 and all(p.status.phase == "Running" for p in pods):
            return nodes.pop()
        return None

    node = _wait(all_running_on_one_node, f"{POD_COUNT} pods Running on one node")
    spare = sandbox.report()["nodegroups"]["spare"]["asg"]["name"]
    sandbox.client("autoscaling").set_desired_capacity(AutoScalingGroupName=spare, DesiredCapacity=1)
    _wait(lambda: [n for n in core.list_node().items if n.metadata.name != node
                   and any(c.type == "Ready" and c.status == "True" for c in n.status.conditions or [])],
          "the spare node Ready")
    return node


def drain_with(tool, sandbox, node):
    """Drain `node` with `tool`; returns (seconds, error or None, pods the tool says it evicted or None)."""
    started = time.monotonic()
    if tool == "kubectl":
        completed = subprocess.run(
            [shutil.which("kubectl"), "drain", node, "--ignore-daemonsets", "--delete-emptydir-data",
             f"--timeout={DRAIN_TIMEOUT}s"],
            env=ansible_env(sandbox), capture_output=True, text=True, timeout=DRAIN_TIMEOUT + 60, check=False)
        error = None if completed.returncode == 0 else completed.stderr.strip()[-500:]
        evicted = completed.stdout.count(" evicted")
    else:
        if tool == "node_drain":
            module, module_args = "node_drain", {
                "name": node, "post_drain_wait": 0,
                "delete_options": {"wait_timeout": DRAIN_TIMEOUT, "ignore_daemonsets": True,
                                   "delete_emptydir_data": True}}
        else:
            module, module_args = "kubernetes.core.k8s_drain", {
                "name": node, "state": "drain", "kubeconfig": sandbox.env["KUBECONFIG"],
                "delete_options": {"wait_timeout": DRAIN_TIMEOUT, "ignore_daemonsets": True,
                                   "delete_emptydir_data": True}}
        result = run_module(sandbox, module, module_args, timeout=DRAIN_TIMEOUT + 60)
        error = result.get("msg") if result.get("failed") else None
        evicted = len(((result.get("nodes") or {}).get(node) or {}).get("evicted") or []) if tool == "node_drain" else None
    return time.monotonic() - started, error, evicted


def unavailable_reason(tool):
    if tool == "kubectl" and shutil.which("kubectl") is None:
        return "kubectl not on PATH"
    if tool == "k8s_drain":
        try:
            importlib.metadata.version("ansible")
        except importlib.metadata.PackageNotFoundError:
            return "the `ansible` package (which ships kubernetes.core) is not installed in .venv"
    return None


def ansible_startup_seconds(sandbox):
    started = time.monotonic()
    subprocess.run([str(BIN_DIR / "ansible"), "localhost", "-m", "ansible.builtin.ping"], env=ansible_env(sandbox),
                   capture_output=True, check=True, timeout=120)
    return time.monotonic() - started


def main():
    parser = argument_parser(__doc__.split("\n", 1)[0], "drain")
    parser.add_argument("--tools", default=",".join(TOOLS), help="comma-separated, from %s" % ", ".join(TOOLS))
    args = parser.parse_args()
    tools = [tool.strip() for tool in args.tools.split(",") if tool.strip()]
    unknown = set(tools) - set(TOOLS)
    if unknown:
        parser.error("unknown tools: %s" % ", ".join(sorted(unknown)))

    results = {"scenario": str(SCENARIO), "pods": POD_COUNT, "tools": {}}
    for tool in tools:
        reason = unavailable_reason(tool)
        if reason:
            results["tools"][tool] = {"skipped": reason}
            continue
        print(f"{tool}: starting a sandbox...", file=sys.stderr)
        with running_sandbox(SCENARIO) as sandbox:
            node = loaded_node(sandbox)
            if tool == "node_drain":
                results["ansible_startup_seconds"] = ansible_startup_seconds(sandbox)
            seconds, error, evicted = drain_with(tool, sandbox, node)
            report = sandbox.report()
        requests = k8s_requests_by_agent(report, USER_AGENTS[tool])
        results["tools"][tool] = {
            "seconds": seconds, "error": error, "pods_reported_evicted": evicted, "requests_total": sum(requests.values()),
            "requests_by_verb": by_verb(requests),
            "requests": {" ".join(key): count for key, count in sorted(requests.items())},
            "pdb_violations": len(report["pdb_violations"]), "pods_lost": len(report["pods_lost"])}
        print(f"{tool}: {seconds:.1f} s{', FAILED: ' + error if error else ''}", file=sys.stderr)

    measured = {tool: figures for tool, figures in results["tools"].items() if "seconds" in figures}
    verbs = sorted({verb for figures in measured.values() for verb in figures["requests_by_verb"]})
    print(f"\nDraining one node with {POD_COUNT} pods (10 paced by maxUnavailable 1, 30 by 20 %, 70 without a PDB)\n")
    print_table(["tool", "wall s", "requests", *verbs, "evicted (own count)", "PDB violations", "error"], [
        [tool, figures["seconds"], figures["requests_total"],
         *(figures["requests_by_verb"].get(verb, 0) for verb in verbs), figures["pods_reported_evicted"],
         figures["pdb_violations"],
         (figures["error"] or "")[:60] or None]
        for tool, figures in measured.items()])
    for tool, figures in results["tools"].items():
        if "skipped" in figures:
            print(f"{tool}: not run: {figures['skipped']}")
    if "ansible_startup_seconds" in results:
        print(f"(`ansible localhost -m ping` takes {results['ansible_startup_seconds']:.1f} s here: node_drain's wall "
              f"time includes that start-up)")
    if "node_drain" in measured and "kubectl" in measured:
        ours, theirs = measured["node_drain"], measured["kubectl"]
        results["comparison"] = {
            "time_ratio": ours["seconds"] / theirs["seconds"],
            "request_ratio": ours["requests_total"] / theirs["requests_total"],
            "goals_met": ours["seconds"] <= theirs["seconds"] and 3 * ours["requests_total"] <= theirs["requests_total"]}
        print("node_drain / kubectl: time %.2f, requests %.2f (goal: time <= 1, requests <= 0.33)"
              % (results["comparison"]["time_ratio"], results["comparison"]["request_ratio"]))
    write_json(args.json, results)
    # A drain that failed is a benchmark that failed (make benchmarks-smoke relies on it).
    sys.exit(1 if any(figures["error"] for figures in measured.values()) else 0)


if __name__ == "__main__":
    main()
