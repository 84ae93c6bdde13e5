# -*- coding: utf-8 -*-
# Copyright: Contributors to the eksops.nodegroup project
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Shared by test_fault_aws_throttle.py and test_fault_sigterm.py (issue 10, Done when: fault_aws_throttle,
fault_sigterm): run playbooks/upgrade_nodegroup.yml on a fault scenario's sandbox, as AWX would, and judge the
upgrade from the sandbox's own report and from the playbook's JSON report (upgrade_report_path).

Each scenario is one self-managed group of 3 nodes in 3 AZs on 1.29 with a 1.30 AMI; the upgrade goes to 1.30
in one batch (max_unavailable 3) with short timeouts, so a run takes about a minute.
"""

from __future__ import annotations

import json
import re
import subprocess
from pathlib import Path
from typing import Any

from eks_sandbox.scenario.loader import load_scenario
from sandbox_helpers import REPO_ROOT, SandboxHandle, run_playbook

PLAYBOOK = REPO_ROOT / "playbooks" / "upgrade_nodegroup.yml"
SCENARIOS = REPO_ROOT / "tests" / "sandbox" / "scenarios"
JOURNAL_PREFIX = "eksops.nodegroup/"
NODEGROUP = "workers"
TARGET_VERSION = "1.30"
MAX_UNAVAILABLE = 3
RUN_TIMEOUT = 300
# Short, but well above what the scenarios need (a PDB retry every 5 s, pods that take 5 s to stop), so that a
# run on a loaded machine does not fail for want of time.
UPGRADE_VARS = {"max_unavailable": MAX_UNAVAILABLE, "drain_timeout": 60, "post_drain_wait": 0,
                "node_ready_timeout": 120}


def scenario_file(name: str) -> dict[str, Any]:
    """A shipped scenario as the sandbox loads it: validated, every default filled."""
    return load_scenario(SCENARIOS / (name + ".yaml"))


def upgrade(sandbox: SandboxHandle, report_path: Path) -> tuple[subprocess.CompletedProcess, dict[str, Any]]:
    """The upgrade playbook to 1.30 on the scenario's cluster; (the finished ansible-playbook, its JSON report).
    The run must succeed."""
    result = run_playbook(sandbox, PLAYBOOK, {
        "cluster_name": sandbox.scenario, "nodegroup_name": NODEGROUP, "kubernetes_version": TARGET_VERSION,
        "upgrade_report_path": str(report_path), **UPGRADE_VARS}, timeout=RUN_TIMEOUT)
    assert result.returncode == 0, result.stdout[-5000:] + result.stderr[-2000:]
    return result, json.loads(report_path.read_text())


def play_recap(output: str) -> dict[str, int]:
    """The counters of the PLAY RECAP line for localhost."""
    [line] = [line for line in output.splitlines() if line.startswith("localhost") and "ok=" in line]
    return {key: int(value) for key, value in re.findall(r"(\w+)=(\d+)", line)}


def assert_upgraded(sandbox: SandboxHandle, before: dict[str, Any], after: dict[str, Any],
                    report: dict[str, Any], output: str) -> None:
    """What every clean upgrade shows. ``before`` / ``after``: the sandbox's reports before and after the run,
    ``report``: the playbook's JSON report, ``output``: its standard output."""
    recap = play_recap(output)
    assert (recap["failed"], recap["rescued"]) == (0, 0), recap
    assert report["status"] == "succeeded" and report["error"] is None, report["error"]
    assert report["on_target_already"] is False

    group_before = before["nodegroups"][NODEGROUP]
    group = after["nodegroups"][NODEGROUP]
    old_instances = sorted(node["instance_id"] for node in group_before["nodes"])
    old_amis = {node["ami"] for node in group_before["nodes"]}
    target_ami = report["launch_template"]["image_id"]
    assert target_ami not in old_amis and report["launch_template"]["previous_image_id"] in old_amis

    # every node replaced: as many nodes as before, all new, all on the target, Ready, schedulable
    assert report["nodes_before"] == len(old_instances)
    assert sorted(report["replaced_instances"]) == old_instances
    nodes = group["nodes"]
    assert len(nodes) == len(old_instances)
    assert not {node["instance_id"] for node in nodes} & set(old_instances)
    assert {node["ami"] for node in nodes} == {target_ami}
    target_version = str(report["launch_template"]["version"])
    assert {str(node["lt_version"]) for node in nodes} == {target_version}
    assert [node["name"] for node in nodes if not node["ready"] or node["unschedulable"]] == []

    # the group as it was: sizes, processes, no journal left
    asg_before, asg = group_before["asg"], group["asg"]
    assert (asg["min"], asg["max"], asg["desired"]) == (asg_before["min"], asg_before["max"], asg_before["desired"])
    assert asg["suspended_processes"] == asg_before["suspended_processes"] == []
    assert [key for key in asg["tags"] if key.startswith(JOURNAL_PREFIX)] == []
    assert str(asg["launch_template"]["version"]) == target_version

    # one surge of max(2 x AZs, max_unavailable) new instances (SPEC U2), never a second one
    zones = scenario_file(sandbox.scenario)["availability_zones"]
    surged = len(old_instances) + max(2 * len(zones), MAX_UNAVAILABLE)
    assert group["instance_count_max"] == surged, (group["instance_count_max"], surged)
    assert group["node_count_max"] <= surged

    # no workload hurt, and the sandbox itself healthy
    assert after["pods_lost"] == []
    assert after["pdb_violations"] == []
    assert {key: workload["ready"] for key, workload in after["workloads"].items()} == \
        {key: workload["replicas"] for key, workload in after["workloads"].items()}
    assert after["controller"]["errors"] == {}
