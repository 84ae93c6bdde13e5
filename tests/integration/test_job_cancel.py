# -*- coding: utf-8 -*-
# Copyright: Contributors to the eksops.nodegroup project
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""A cancelled job stops working (issue 25 item 1, SPEC W5).

AWX's cancel and ansible-runner's job timeout SIGKILL ansible-playbook's process group (ansible-runner
src/ansible_runner/runner.py, Runner.run: ``if self.canceled or self.timed_out ...: Runner.handle_termination(
child.pid)``, which does ``os.killpg(os.getpgid(pid), signal.SIGKILL)``); ansible-core's worker runs in a session
of its own (setsid) and outlives it. A person at a terminal sends SIGINT (Ctrl-C) or SIGTERM, which ansible-playbook
forwards to its workers. In each case, inside a phase, the job is stopped that way; then for STOP_WAIT seconds the
sandbox must see no eviction, pod deletion, termination, size or process change, the lease must be released, the
journal must name the phase, and the same command run again must finish the upgrade with no pod lost.

One sandbox serves the whole module (as test_crash_resume.py): each case upgrades the group to the AMI it does not
run yet.
"""

from __future__ import annotations

import datetime
import json
import os
import signal
import subprocess
import threading
import time
from pathlib import Path

import pytest

from nodegroup_state import workers_asg
from sandbox_helpers import REPO_ROOT, SandboxHandle, ansible_env
from upgrade_runs import (
    PLAYBOOK,
    RUN_TIMEOUT,
    assert_upgraded,
    journal_phase,
    other_ami,
    playbook_command,
    upgrade_extra_vars,
    wait_for_journal_phase,
)

SCENARIO = "surge5"
# The issue measured the orphaned worker's forced deletion and termination 10-13 s after the job had ended.
STOP_WAIT = 15
# What a cancelled job must not start: AWS actions (by name) and Kubernetes requests (by "<verb> <resource>").
DESTRUCTIVE_AWS = ("UpdateAutoScalingGroup", "SetDesiredCapacity", "TerminateInstanceInAutoScalingGroup",
                   "SuspendProcesses", "ResumeProcesses", "SetInstanceProtection", "UpdateNodegroupVersion",
                   "UpdateNodegroupConfig")
DESTRUCTIVE_K8S = ("create pods/eviction", "delete pods")
LEASE_TAG = "eksops.nodegroup/lease"
# ansible-runner's job timeout: an uninterrupted upgrade of this scenario takes about 20 s, its upgrade phase from
# about 9 s to 17 s.
JOB_TIMEOUT = 12

# phase -> (the output line that starts the phase's changes, the journal phase to wait for before the stop or None,
# then seconds to wait): inside the phase's one task (the setup's launch template step follows its preflight report at
# once; batch 1's drain is under way 1.5 s after its line)
STOP_POINTS = {
    "setup": ("Preflight: ", None, 0),
    "scale_up": ("Scale up the Auto Scaling group and wait for the new nodes", "scale_up", 0),
    "upgrade": ("batch 1/", None, 1.5),
    "scale_down": ("Remove the surplus nodes, restore the group and clear the journal", "scale_down", 0),
}


def _destructive_counts(sandbox: SandboxHandle) -> dict[str, int]:
    report = sandbox.report()
    counts = {key: count for key, count in report["aws_calls"].items() if key.split(" ", 1)[0] in DESTRUCTIVE_AWS}
    for key, count in report["k8s_requests"].items():
        _agent, verb, resource, status = key.rsplit(" ", 3)
        if "%s %s" % (verb, resource) in DESTRUCTIVE_K8S:
            name = "%s %s %s" % (verb, resource, status)
            counts[name] = counts.get(name, 0) + count
    return counts


def _lease(sandbox: SandboxHandle) -> str | None:
    return {tag["Key"]: tag["Value"] for tag in workers_asg(sandbox).get("Tags", [])}.get(LEASE_TAG)


def _after_the_stop(sandbox: SandboxHandle, phases: tuple[str | None, ...], released: bool = True) -> None:
    """Nothing destructive starts for STOP_WAIT seconds after the stop (a request sent before it may land in the first
    second: work in flight ends); the journal names one of ``phases`` (None: no journal); the lease is released
    (``released``: the stop fell inside one of the collection's tasks) or, when the stop fell between two tasks,
    renewed no more and left to lapse, as a killed run's (nodegroup/lease.py), waited for here."""
    time.sleep(1)
    at_stop, lease_at_stop = _destructive_counts(sandbox), _lease(sandbox)
    time.sleep(STOP_WAIT)
    assert _destructive_counts(sandbox) == at_stop
    assert journal_phase(sandbox) in phases
    lease = _lease(sandbox)
    if released or lease is None:
        assert lease is None
        return
    assert lease == lease_at_stop
    expires = datetime.datetime.strptime(lease.split()[1], "%Y-%m-%dT%H:%M:%SZ").replace(tzinfo=datetime.timezone.utc)
    time.sleep(max(0.0, (expires - datetime.datetime.now(datetime.timezone.utc)).total_seconds()) + 1)


def _rerun_converges(sandbox: SandboxHandle, command: list[str], report_path: Path, target_ami: str,
                     sizes_before: tuple[int, int, int]) -> dict:
    """The same command again, at once (no lease to wait for): the upgrade finishes."""
    rerun = subprocess.run(command, capture_output=True, text=True, env=ansible_env(sandbox), cwd=REPO_ROOT,
                           timeout=RUN_TIMEOUT, check=False)
    assert rerun.returncode == 0, rerun.stdout[-5000:] + rerun.stderr[-2000:]
    report = json.loads(report_path.read_text())
    assert report["status"] == "succeeded" and report["nodes_before"] == sizes_before[2]
    assert_upgraded(sandbox, target_ami, sizes_before)
    return report


def _stop_at(sandbox: SandboxHandle, command: list[str], phase: str, stop) -> str:
    """Start the playbook in a session of its own, call ``stop(process)`` inside ``phase``; the output."""
    marker, phase_at_stop, delay = STOP_POINTS[phase]
    lines = []
    with subprocess.Popen(command, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
                          env=ansible_env(sandbox), cwd=REPO_ROOT, start_new_session=True) as process:
        for line in process.stdout:
            lines.append(line)
            if marker in line:
                if phase_at_stop is not None:
                    wait_for_journal_phase(sandbox, phase_at_stop)
                time.sleep(delay)
                stop(process)
                break
        process.stdout.close()
        process.wait(timeout=60)
    output = "".join(lines)
    assert marker in output, f"the playbook ended before reaching {marker!r}:\n{output[-3000:]}"
    return output


def _group_before(sandbox: SandboxHandle) -> tuple[tuple[int, int, int], str]:
    asg = workers_asg(sandbox)
    return (asg["MinSize"], asg["MaxSize"], asg["DesiredCapacity"]), other_ami(sandbox)[1]


# ansible-playbook itself signalled: SIGINT (Ctrl-C) and SIGTERM, forwarded to the worker; and its process group
# SIGKILLed, as ansible-runner cancels.
SIGNALLED = [
    ("setup", lambda process: process.send_signal(signal.SIGINT)),
    ("scale_up", lambda process: process.send_signal(signal.SIGTERM)),
    ("upgrade", lambda process: os.killpg(process.pid, signal.SIGKILL)),
    ("upgrade", lambda process: process.send_signal(signal.SIGTERM)),
    ("scale_down", lambda process: process.send_signal(signal.SIGTERM)),
]


@pytest.mark.timeout(RUN_TIMEOUT + 300)
@pytest.mark.parametrize("phase,stop", SIGNALLED, ids=["setup-sigint", "scale_up-sigterm", "upgrade-sigkill_group",
                                                       "upgrade-sigterm", "scale_down-sigterm"])
def test_issue25_item1_a_stopped_job_starts_nothing_destructive_and_its_rerun_finishes(
        sandbox, tmp_path, phase, stop):
    sizes_before, target_ami = _group_before(sandbox)
    report_path = tmp_path / "upgrade-report.json"
    command = playbook_command(target_ami, report_path, SCENARIO)
    _stop_at(sandbox, command, phase, stop)
    # Stopped in the setup phase, before or after its launch template step started the journal.
    _after_the_stop(sandbox, (None, "setup") if phase == "setup" else (phase,))
    report = _rerun_converges(sandbox, command, report_path, target_ami, sizes_before)
    if phase == "setup":
        # Stopped before any drain: every pod of the old nodes moved once.
        assert report["disruptions_per_old_pod"] in (None, 1.0)


# ---------------------------------------------------------------------------------------------- ansible-runner


def _runner_upgrade(sandbox: SandboxHandle, tmp_path: Path, report_path: Path, target_ami: str, **kwargs):
    """The upgrade playbook through ansible_runner.run, as AWX runs a job (a private data dir, the environment as
    envvars); ``kwargs``: ansible_runner.run's cancel_callback, timeout, event_handler."""
    import ansible_runner

    private_data_dir = tmp_path / "runner"
    private_data_dir.mkdir()
    return ansible_runner.run(
        private_data_dir=str(private_data_dir), playbook=str(PLAYBOOK), quiet=True,
        extravars=upgrade_extra_vars(target_ami, report_path, SCENARIO), envvars=ansible_env(sandbox),
        # How often ansible-runner looks at cancel_callback and the timeout (default 5 s).
        settings={"pexpect_timeout": 0.5}, **kwargs)


@pytest.mark.timeout(RUN_TIMEOUT + 300)
def test_issue25_item1_an_ansible_runner_cancel_mid_drain_starts_nothing_destructive(sandbox, tmp_path):
    """The job cancelled (cancel_callback) while batch 1 drains: ansible-runner SIGKILLs the process group."""
    sizes_before, target_ami = _group_before(sandbox)
    report_path = tmp_path / "upgrade-report.json"
    marker_seen = threading.Event()

    def event_handler(event):
        if STOP_POINTS["upgrade"][0] in (event.get("stdout") or ""):
            marker_seen.set()
        return True

    def cancel_callback():
        return marker_seen.is_set()

    runner = _runner_upgrade(sandbox, tmp_path, report_path, target_ami, event_handler=event_handler,
                             cancel_callback=cancel_callback)
    assert runner.status == "canceled" and marker_seen.is_set(), runner.status
    _after_the_stop(sandbox, ("upgrade",))
    _rerun_converges(sandbox, playbook_command(target_ami, report_path, SCENARIO), report_path, target_ami,
                     sizes_before)


@pytest.mark.timeout(RUN_TIMEOUT + 300)
def test_issue25_item1_an_ansible_runner_job_timeout_starts_nothing_destructive(sandbox, tmp_path):
    """The job ended by ansible-runner's job timeout, wherever it falls (about the upgrade phase here); if between
    two tasks, the lease lapses instead of being released."""
    sizes_before, target_ami = _group_before(sandbox)
    report_path = tmp_path / "upgrade-report.json"
    runner = _runner_upgrade(sandbox, tmp_path, report_path, target_ami, timeout=JOB_TIMEOUT)
    assert runner.status == "timeout", runner.status
    _after_the_stop(sandbox, (None, "setup", "scale_up", "upgrade", "scale_down"), released=False)
    _rerun_converges(sandbox, playbook_command(target_ami, report_path, SCENARIO), report_path, target_ami,
                     sizes_before)
