# -*- coding: utf-8 -*-
# Copyright: Contributors to the eksops.nodegroup project
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""One run of playbooks/upgrade_nodegroup.yml against a sandbox, measured; and the checks of a clean end state
(issue 4): every node on the target, sizes restored, nothing cordoned, no suspended process, no journal tag,
no pod lost, no PodDisruptionBudget violated. Used by upgrade.py and soak.py."""

from __future__ import annotations

import json
import os
import queue
import signal
import subprocess
import tempfile
import threading
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable

from common import REPO_ROOT
from sandbox_helpers import BIN_DIR, SandboxHandle, ansible_env, kill_playbook

PLAYBOOK = REPO_ROOT / "playbooks" / "upgrade_nodegroup.yml"
SURGE_PLAYBOOK = REPO_ROOT / "playbooks" / "surge_upgrade.yml"
JOURNAL_PREFIX = "eksops.nodegroup/"
NODEGROUP = "workers"


@dataclass
class PlaybookRun:
    returncode: int
    seconds: float
    peak_rss_mib: float          # the largest process of the run: ansible-playbook or one of its workers/modules
    output: str
    report: dict[str, Any] | None   # the upgrade report (upgrade_report_path), None if it was not written
    killed: bool = False


@dataclass
class GroupState:
    asg: dict[str, Any]
    sizes: tuple[int, int, int] = field(init=False)

    def __post_init__(self):
        self.sizes = (self.asg["MinSize"], self.asg["MaxSize"], self.asg["DesiredCapacity"])


def workers_asg(sandbox: SandboxHandle) -> dict[str, Any]:
    name = sandbox.report()["nodegroups"][NODEGROUP]["asg"]["name"]
    return sandbox.client("autoscaling").describe_auto_scaling_groups(AutoScalingGroupNames=[name])[
        "AutoScalingGroups"][0]


def ami_pair(sandbox: SandboxHandle) -> tuple[str, str]:
    """(the AMI every node runs now, the scenario's other AMI): each run upgrades to the AMI not yet in use."""
    nodes = sandbox.report()["nodegroups"][NODEGROUP]["nodes"]
    current = {node["ami"] for node in nodes}
    if len(current) != 1:
        raise RuntimeError(f"the nodes run several AMIs: {sorted(current)}")
    images = sandbox.client("ec2").describe_images(Owners=["self", "amazon"])["Images"]
    others = sorted(image["ImageId"] for image in images if image["ImageId"] not in current)
    if len(others) != 1:
        raise RuntimeError(f"expected one other AMI, found {others}")
    return current.pop(), others[0]


def run_upgrade(sandbox: SandboxHandle, extra_vars: dict[str, Any], timeout: float,
                on_line: Callable[[str], None] | None = None, kill_after: float | None = None,
                playbook: Path = PLAYBOOK) -> PlaybookRun:
    """Run the playbook (the rolling one unless told) to the end (or SIGKILL its process group after kill_after
    seconds), calling on_line with every output line as it comes."""
    with tempfile.TemporaryDirectory(prefix="upgrade-report-", dir=sandbox.state_dir) as scratch:
        report_path = Path(scratch) / "report.json"
        # Runs alternate between two AMIs (ami_pair), so every other one goes back to the older Kubernetes. The
        # scenarios' terraform-made groups are pinned behind their owner's back (no apply follows: SPEC W1).
        command = [str(BIN_DIR / "ansible-playbook"), str(playbook),
                   "-e", json.dumps({"allow_downgrade": True, "accept_owner_revert": True, **extra_vars,
                                     "upgrade_report_path": str(report_path)})]
        lines = []
        killed = False
        started = time.monotonic()
        deadline = started + (kill_after if kill_after is not None else timeout)
        process = subprocess.Popen(command, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
                                   env=ansible_env(sandbox), cwd=REPO_ROOT, start_new_session=True)
        # Reaped with wait4 (never Popen.poll/wait): its rusage covers this child and the descendants it waited
        # for, which gives the controller's peak RSS.
        exited = None
        output: queue.Queue = queue.Queue()
        reader = threading.Thread(target=lambda: [output.put(line) for line in process.stdout], daemon=True)
        reader.start()

        def take_lines():
            while not output.empty():
                line = output.get()
                lines.append(line)
                if on_line is not None:
                    on_line(line)

        try:
            while exited is None:
                take_lines()
                pid, status, usage = os.wait4(process.pid, os.WNOHANG)
                if pid:
                    exited = status, usage
                elif time.monotonic() > deadline:
                    # The whole job, the modules Ansible's workers run in sessions of their own too.
                    kill_playbook(process, sandbox)
                    killed = True
                    exited = os.wait4(process.pid, 0)[1:]
                else:
                    time.sleep(0.05)
        finally:
            if exited is None:
                os.killpg(process.pid, signal.SIGKILL)
                exited = os.wait4(process.pid, 0)[1:]
            status, usage = exited
            process.returncode = os.waitstatus_to_exitcode(status)
            reader.join(timeout=10)
            take_lines()
            process.stdout.close()
        seconds = time.monotonic() - started
        report = json.loads(report_path.read_text()) if report_path.exists() else None
    if killed and kill_after is None:
        raise TimeoutError(f"ansible-playbook did not finish within {timeout} s:\n{''.join(lines)[-3000:]}")
    return PlaybookRun(returncode=process.returncode, seconds=seconds, peak_rss_mib=usage.ru_maxrss / 1024,
                       output="".join(lines), report=report, killed=killed)


def end_state_problems(sandbox: SandboxHandle, target_ami: str, sizes_before: tuple[int, int, int],
                       baseline: dict[str, Any] | None = None) -> list[str]:
    """What keeps the node group from the clean end state of an upgrade; empty when it is clean. Pods lost and
    PDB violations count from the sandbox report `baseline` on (the report keeps them for the whole run)."""
    problems = []
    report = sandbox.report()
    lost = report["pods_lost"][len(baseline["pods_lost"]):] if baseline else report["pods_lost"]
    violations = report["pdb_violations"][len(baseline["pdb_violations"]):] if baseline else report["pdb_violations"]
    asg = workers_asg(sandbox)
    group = GroupState(asg)
    nodes = report["nodegroups"][NODEGROUP]["nodes"]
    target_version = str(asg["LaunchTemplate"]["Version"])
    if group.sizes != sizes_before:
        problems.append(f"sizes min/max/desired {group.sizes}, before {sizes_before}")
    off_target = [n["name"] for n in nodes if n["ami"] != target_ami or str(n["lt_version"]) != target_version]
    if off_target:
        problems.append(f"nodes not on {target_ami} / launch template version {target_version}: {off_target}")
    if len(nodes) != sizes_before[2]:
        problems.append(f"{len(nodes)} nodes, desired capacity before was {sizes_before[2]}")
    not_serving = [n["name"] for n in nodes if n["unschedulable"] or not n["ready"]]
    if not_serving:
        problems.append(f"cordoned or not Ready: {not_serving}")
    if asg.get("SuspendedProcesses"):
        problems.append("suspended processes: %s" % [p["ProcessName"] for p in asg["SuspendedProcesses"]])
    journal = [t["Key"] for t in asg.get("Tags", []) if t["Key"].startswith(JOURNAL_PREFIX)]
    if journal:
        problems.append(f"journal tags left: {journal}")
    if lost:
        problems.append(f"pods lost: {lost}")
    if violations:
        problems.append(f"PDB violations: {violations}")
    return problems
