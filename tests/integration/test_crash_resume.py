# -*- coding: utf-8 -*-
# Copyright: Contributors to the eksops.nodegroup project
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Crash and resume of the upgrade playbook (DESIGN "The upgrade journal"; SPEC U1-U6, A1).

The playbook is SIGKILLed, with every process it started, inside each phase, as when an AWX job is killed; the
same command is then run again and must leave the group exactly as an uninterrupted run does: every node on the
target, sizes as before, no suspended process, no journal, no cordoned node, no pod lost, no PDB violated.

One sandbox serves the whole module: each case upgrades the group to the AMI it does not run yet.
"""

from __future__ import annotations

import json
import signal
import subprocess
import time
from pathlib import Path

import pytest

from nodegroup_state import workers_asg
from upgrade_runs import (
    JOURNAL_PREFIX,
    RUN_TIMEOUT,
    assert_upgraded,
    end_the_killed_runs_lease,
    journal_phase,
    other_ami,
    playbook_command,
    wait_for_journal_phase,
)
from sandbox_helpers import (
    REPO_ROOT,
    SandboxHandle,
    ansible_env,
    kill_playbook,
    start_sandbox,
    stop_sandbox,
)

SCENARIO = "surge5"

# phase -> (line of the playbook output that starts the phase's changes, journal phase to wait for before the
# kill, or None: kill 1.5 s after the line)
KILL_POINTS = {
    # nodegroup_setup's preflight report, its last line before the launch template version, the phase's change
    "setup": ("Preflight: ", None),
    "scale_up": ("Scale up the Auto Scaling group and wait for the new nodes", "scale_up"),
    # node_replace's line as batch 1 starts its drain (issue 11 item 4: one task for the loop, lines as it runs)
    "upgrade": ("batch 1/", None),
    "scale_down": ("Remove the surplus nodes, restore the group and clear the journal", "scale_down"),
}
# phase -> the journal phase the killed run must have left, so that a rerun knows where it stopped
JOURNAL_PHASE_AT_KILL = {"scale_up": "scale_up", "upgrade": "upgrade", "scale_down": "scale_down"}


def _asg(sandbox: SandboxHandle) -> dict:
    return workers_asg(sandbox)


def _run_and_kill(sandbox: SandboxHandle, command: list[str], marker: str, phase_at_kill: str | None,
                  log: Path) -> str:
    """Start the playbook, SIGKILL its process group inside the phase that `marker` starts; return the output."""
    lines = []
    with subprocess.Popen(command, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
                          env=ansible_env(sandbox), cwd=REPO_ROOT, start_new_session=True) as process:
        deadline = time.monotonic() + RUN_TIMEOUT
        for line in process.stdout:
            lines.append(line)
            if marker in line:
                wait_for_journal_phase(sandbox, phase_at_kill)
                kill_playbook(process, sandbox)
                break
            if time.monotonic() > deadline:
                kill_playbook(process, sandbox)
                break
        process.wait(timeout=30)
    output = "".join(lines)
    log.write_text(output)
    assert marker in output, f"the playbook ended before reaching {marker!r}:\n{output[-3000:]}"
    assert process.returncode == -signal.SIGKILL, output[-3000:]
    return output


@pytest.mark.timeout(2 * RUN_TIMEOUT + 120)
@pytest.mark.parametrize("phase", list(KILL_POINTS))
def test_rerun_after_sigkill_in_phase_finishes_the_upgrade(sandbox, tmp_path, phase):
    """A job killed inside `phase` is finished by running the same command again (U1-U6 resume)."""
    marker, phase_at_kill = KILL_POINTS[phase]
    asg = _asg(sandbox)
    sizes_before = (asg["MinSize"], asg["MaxSize"], asg["DesiredCapacity"])
    _current_ami, target_ami = other_ami(sandbox)
    report_path = tmp_path / "upgrade-report.json"
    command = playbook_command(target_ami, report_path)

    _run_and_kill(sandbox, command, marker, phase_at_kill, tmp_path / "killed-run.log")
    if phase in JOURNAL_PHASE_AT_KILL:
        assert journal_phase(sandbox) == JOURNAL_PHASE_AT_KILL[phase]

    end_the_killed_runs_lease(sandbox)
    rerun = subprocess.run(command, capture_output=True, text=True, env=ansible_env(sandbox), cwd=REPO_ROOT,
                           timeout=RUN_TIMEOUT, check=False)
    assert rerun.returncode == 0, rerun.stdout[-5000:] + rerun.stderr[-2000:]
    report = json.loads(report_path.read_text())
    assert report["status"] == "succeeded"
    assert report["launch_template"]["image_id"] == target_ami
    # the group's size before the upgrade, not the surged size the rerun found
    assert report["nodes_before"] == sizes_before[2]
    assert_upgraded(sandbox, target_ami, sizes_before)


# --------------------------------------------------------------------------- rollback after a resumed run

NEVER_READY = "fault_never_ready"


@pytest.fixture(scope="module")
def never_ready_sandbox(tmp_path_factory):
    """The target AMI's nodes never become Ready (SPEC U3): every scale-up fails with NodeCreationFailure."""
    state_dir = tmp_path_factory.mktemp("sandbox-" + NEVER_READY)
    handle = None
    try:
        handle = start_sandbox(NEVER_READY, state_dir)
        yield handle
    finally:
        if handle is not None:
            handle.close()
        stop_sandbox(state_dir)


def _never_ready_command(sandbox: SandboxHandle, report_path: Path) -> list[str]:
    _current_ami, target_ami = other_ami(sandbox)
    return playbook_command(target_ami, report_path, cluster_name=NEVER_READY, max_unavailable=1,
                            node_ready_timeout=15)


def _kill_in_scale_up_then_rerun(sandbox: SandboxHandle, tmp_path: Path, between=None) -> dict:
    """Kill the upgrade inside the scale-up, call `between`, rerun it; the rerun's report (it must fail)."""
    report_path = tmp_path / "upgrade-report.json"
    command = _never_ready_command(sandbox, report_path)
    marker, phase_at_kill = KILL_POINTS["scale_up"]
    _run_and_kill(sandbox, command, marker, phase_at_kill, tmp_path / "killed-run.log")
    assert journal_phase(sandbox) == "scale_up"
    if between is not None:
        between()
    end_the_killed_runs_lease(sandbox)
    rerun = subprocess.run(command, capture_output=True, text=True, env=ansible_env(sandbox), cwd=REPO_ROOT,
                           timeout=RUN_TIMEOUT, check=False)
    assert rerun.returncode != 0, rerun.stdout[-5000:]
    report = json.loads(report_path.read_text())
    assert report["status"] == "failed" and report["error"]["code"] == "NodeCreationFailure", report["error"]
    assert report["error"]["phase"] == "scale_up"
    return report


@pytest.mark.timeout(2 * RUN_TIMEOUT + 120)
def test_u1_u6_rollback_in_a_resumed_run_goes_back_to_the_version_before_the_upgrade(never_ready_sandbox, tmp_path):
    """U1, U3, U6: the rerun after a crash finds the group already on the target version; its rollback must
    still point the group back at the version before the upgrade (the journal's), with the old nodes kept."""
    sandbox = never_ready_sandbox
    asg = _asg(sandbox)
    before = (asg["MinSize"], asg["MaxSize"], asg["DesiredCapacity"], asg["LaunchTemplate"]["Version"])
    old_ami, _target_ami = other_ami(sandbox)

    report = _kill_in_scale_up_then_rerun(sandbox, tmp_path)
    assert report["error"]["rolled_back"] is True, report["error"]
    assert report["launch_template"]["previous_version"] == int(before[3])
    asg = _asg(sandbox)
    assert (asg["MinSize"], asg["MaxSize"], asg["DesiredCapacity"], asg["LaunchTemplate"]["Version"]) == before
    assert asg.get("SuspendedProcesses", []) == []
    assert [tag["Key"] for tag in asg.get("Tags", []) if tag["Key"].startswith(JOURNAL_PREFIX)] == []
    nodes = sandbox.report()["nodegroups"]["workers"]["nodes"]
    assert {node["ami"] for node in nodes} == {old_ami} and len(nodes) == before[2]


@pytest.mark.timeout(2 * RUN_TIMEOUT + 120)
def test_u5_no_rollback_in_a_resumed_run_once_an_earlier_run_replaced_an_old_node(never_ready_sandbox, tmp_path):
    """U3/U5 rollback guard from the group's state: an earlier (killed) run already replaced an old node, so the
    resumed run's NodeCreationFailure must not roll back, though this run replaced nothing itself."""
    sandbox = never_ready_sandbox
    autoscaling = sandbox.client("autoscaling")

    def replace_an_old_node():
        asg = _asg(sandbox)
        old = sorted(i["InstanceId"] for i in asg["Instances"]
                     if i["LaunchTemplate"]["Version"] != asg["LaunchTemplate"]["Version"])
        autoscaling.terminate_instance_in_auto_scaling_group(InstanceId=old[0], ShouldDecrementDesiredCapacity=False)
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline:
            instances = [i for i in _asg(sandbox)["Instances"] if i["InstanceId"] != old[0]]
            if len(instances) == asg["DesiredCapacity"]:
                return
            time.sleep(0.5)
        raise AssertionError("the Auto Scaling group did not replace %s" % old[0])

    report = _kill_in_scale_up_then_rerun(sandbox, tmp_path, between=replace_an_old_node)
    assert report["error"]["rolled_back"] is False, report["error"]
    asg = _asg(sandbox)
    assert asg["LaunchTemplate"]["Version"] == str(report["launch_template"]["version"])
    assert journal_phase(sandbox) == "scale_up"
