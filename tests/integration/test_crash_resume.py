"""Crash and resume of the upgrade playbook (DESIGN "The upgrade journal"; SPEC U1-U6, A1).

The playbook is SIGKILLed, with every process it started, inside each phase, as when an AWX job is killed; the
same command is then run again and must leave the group exactly as an uninterrupted run does: every node on the
target, sizes as before, no suspended process, no journal, no cordoned node, no pod lost, no PDB violated.

One sandbox serves the whole module: each case upgrades the group to the AMI it does not run yet.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import time
from pathlib import Path

import pytest

from sandbox_helpers import BIN_DIR, REPO_ROOT, SandboxHandle, ansible_env

SCENARIO = "surge5"
PLAYBOOK = REPO_ROOT / "playbooks" / "upgrade_nodegroup.yml"
JOURNAL_PREFIX = "eksops.nodegroup/"
RUN_TIMEOUT = 420

# phase -> (line of the playbook output that starts the phase's changes, journal phase to wait for before the
# kill, or None: kill 1.5 s after the line)
KILL_POINTS = {
    "setup": ("Create the target launch template version", None),
    "scale_up": ("Scale up the Auto Scaling group and wait for the new nodes", "scale_up"),
    "upgrade": ("Drain the nodes of batch", None),
    "scale_down": ("Remove the surplus nodes, restore the group and clear the journal", "scale_down"),
}


def _asg(sandbox: SandboxHandle) -> dict:
    return sandbox.client("autoscaling").describe_auto_scaling_groups()["AutoScalingGroups"][0]


def _journal_phase(sandbox: SandboxHandle) -> str | None:
    tags = {tag["Key"]: tag["Value"] for tag in _asg(sandbox).get("Tags", [])}
    return tags.get(JOURNAL_PREFIX + "phase")


def _playbook_command(image_id: str, report_path: Path) -> list[str]:
    extra_vars = {"cluster_name": SCENARIO, "nodegroup_name": "workers", "image_id": image_id,
                  "max_unavailable": 3, "post_drain_wait": 1, "upgrade_report_path": str(report_path)}
    return [str(BIN_DIR / "ansible-playbook"), str(PLAYBOOK), "-e", json.dumps(extra_vars)]


def _wait_for_journal_phase(sandbox: SandboxHandle, phase: str | None, timeout: float = 60) -> None:
    """Until the phase's module has recorded `phase` in the journal (it does so before changing anything)."""
    if phase is None:
        # Nothing to watch for: let the phase's module get under way.
        time.sleep(1.5)
        return
    deadline = time.monotonic() + timeout
    while _journal_phase(sandbox) != phase and time.monotonic() < deadline:
        time.sleep(0.2)


def _run_and_kill(sandbox: SandboxHandle, command: list[str], marker: str, journal_phase: str | None,
                  log: Path) -> str:
    """Start the playbook, SIGKILL its process group inside the phase that `marker` starts; return the output."""
    lines = []
    with subprocess.Popen(command, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
                          env=ansible_env(sandbox), cwd=REPO_ROOT, start_new_session=True) as process:
        deadline = time.monotonic() + RUN_TIMEOUT
        for line in process.stdout:
            lines.append(line)
            if marker in line:
                _wait_for_journal_phase(sandbox, journal_phase)
                os.killpg(process.pid, signal.SIGKILL)
                break
            if time.monotonic() > deadline:
                os.killpg(process.pid, signal.SIGKILL)
                break
        process.wait(timeout=30)
    output = "".join(lines)
    log.write_text(output)
    assert marker in output, f"the playbook ended before reaching {marker!r}:\n{output[-3000:]}"
    assert process.returncode == -signal.SIGKILL, output[-3000:]
    return output


def _other_ami(sandbox: SandboxHandle) -> tuple[str, str]:
    """(AMI the nodes run now, the other AMI of the scenario)."""
    nodes = sandbox.report()["nodegroups"]["workers"]["nodes"]
    current = {node["ami"] for node in nodes}
    assert len(current) == 1, current
    images = sandbox.client("ec2").describe_images(Owners=["self", "amazon"])["Images"]
    others = sorted(image["ImageId"] for image in images if image["ImageId"] not in current)
    assert len(others) == 1, others
    return current.pop(), others[0]


def _assert_upgraded(sandbox: SandboxHandle, target_ami: str, sizes_before: tuple[int, int, int]) -> None:
    report = sandbox.report()
    group = report["nodegroups"]["workers"]
    asg = _asg(sandbox)
    assert (asg["MinSize"], asg["MaxSize"], asg["DesiredCapacity"]) == sizes_before
    assert asg.get("SuspendedProcesses", []) == []
    assert [tag["Key"] for tag in asg.get("Tags", []) if tag["Key"].startswith(JOURNAL_PREFIX)] == []
    nodes = group["nodes"]
    assert len(nodes) == sizes_before[2]
    assert {node["ami"] for node in nodes} == {target_ami}
    assert [node["name"] for node in nodes if node["unschedulable"] or not node["ready"]] == []
    assert report["pods_lost"] == []
    assert report["pdb_violations"] == []


@pytest.mark.timeout(2 * RUN_TIMEOUT + 120)
@pytest.mark.parametrize("phase", list(KILL_POINTS))
def test_rerun_after_sigkill_in_phase_finishes_the_upgrade(sandbox, tmp_path, phase):
    """A job killed inside `phase` is finished by running the same command again (U1-U6 resume)."""
    marker, journal_phase = KILL_POINTS[phase]
    asg = _asg(sandbox)
    sizes_before = (asg["MinSize"], asg["MaxSize"], asg["DesiredCapacity"])
    _current_ami, target_ami = _other_ami(sandbox)
    report_path = tmp_path / "upgrade-report.json"
    command = _playbook_command(target_ami, report_path)

    _run_and_kill(sandbox, command, marker, journal_phase, tmp_path / "killed-run.log")
    if journal_phase is not None:
        assert _journal_phase(sandbox) == journal_phase

    rerun = subprocess.run(command, capture_output=True, text=True, env=ansible_env(sandbox), cwd=REPO_ROOT,
                           timeout=RUN_TIMEOUT, check=False)
    assert rerun.returncode == 0, rerun.stdout[-5000:] + rerun.stderr[-2000:]
    report = json.loads(report_path.read_text())
    assert report["status"] == "succeeded"
    assert report["launch_template"]["image_id"] == target_ami
    _assert_upgraded(sandbox, target_ami, sizes_before)
