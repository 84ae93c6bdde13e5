# -*- coding: utf-8 -*-
# Copyright: Contributors to the eksops.nodegroup project
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""The upgrade playbook run against a sandbox's `workers` group, as the tests that interrupt it and run it again use it
(test_crash_resume.py, test_job_cancel.py): its command, the journal's phase, the other AMI, the converged group."""

from __future__ import annotations

import json
import time
from pathlib import Path

from asg_helpers import journal_tags
from nodegroup_state import workers_asg
from sandbox_helpers import BIN_DIR, OWNER_REVERT_ACCEPTED, REPO_ROOT, SandboxHandle

PLAYBOOK = REPO_ROOT / "playbooks" / "upgrade_nodegroup.yml"
JOURNAL_PREFIX = "eksops.nodegroup/"
RUN_TIMEOUT = 420


def journal_phase(sandbox: SandboxHandle) -> str | None:
    return journal_tags(workers_asg(sandbox)).get("phase")


def upgrade_extra_vars(image_id: str, report_path: Path, cluster_name: str, **extra) -> dict:
    # The tests take turns between the scenario's two AMIs: every other run goes back to the older Kubernetes.
    return {**OWNER_REVERT_ACCEPTED, "cluster_name": cluster_name, "nodegroup_name": "workers", "image_id": image_id,
            "max_unavailable": 3, "post_drain_wait": 1, "allow_downgrade": True,
            "upgrade_report_path": str(report_path), **extra}


def playbook_command(image_id: str, report_path: Path, cluster_name: str = "surge5", **extra) -> list[str]:
    return [str(BIN_DIR / "ansible-playbook"), str(PLAYBOOK), "-e",
            json.dumps(upgrade_extra_vars(image_id, report_path, cluster_name, **extra))]


def wait_for_journal_phase(sandbox: SandboxHandle, phase: str | None, timeout: float = 60) -> None:
    """Until the phase's module has recorded `phase` in the journal (it does so before changing anything)."""
    if phase is None:
        # Nothing to watch for: let the phase's module get under way.
        time.sleep(1.5)
        return
    deadline = time.monotonic() + timeout
    while journal_phase(sandbox) != phase and time.monotonic() < deadline:
        time.sleep(0.2)


def end_the_killed_runs_lease(sandbox: SandboxHandle) -> None:
    """A killed run keeps its lease on the group until it ends, 60 s at most (issue 10 item 21), and the rerun is
    refused until then. The person who knows the run is gone (AWX shows it cancelled) may delete the tag to rerun
    at once, as the docs say; the tests that kill a run do that rather than wait (the expiry itself: test_lease.py)."""
    name = workers_asg(sandbox)["AutoScalingGroupName"]
    sandbox.client("autoscaling").delete_tags(Tags=[dict(
        ResourceId=name, ResourceType="auto-scaling-group", Key=JOURNAL_PREFIX + "lease")])


def other_ami(sandbox: SandboxHandle) -> tuple[str, str]:
    """(AMI the nodes run now, the other AMI of the scenario)."""
    nodes = sandbox.report()["nodegroups"]["workers"]["nodes"]
    current = {node["ami"] for node in nodes}
    assert len(current) == 1, current
    images = sandbox.client("ec2").describe_images(Owners=["self", "amazon"])["Images"]
    others = sorted(image["ImageId"] for image in images if image["ImageId"] not in current)
    assert len(others) == 1, others
    return current.pop(), others[0]


def assert_upgraded(sandbox: SandboxHandle, target_ami: str, sizes_before: tuple[int, int, int]) -> None:
    """Every node on the target, sizes as before, no suspended process, no journal, nothing cordoned, no pod lost."""
    report = sandbox.report()
    group = report["nodegroups"]["workers"]
    asg = workers_asg(sandbox)
    assert (asg["MinSize"], asg["MaxSize"], asg["DesiredCapacity"]) == sizes_before
    assert asg.get("SuspendedProcesses", []) == []
    assert [tag["Key"] for tag in asg.get("Tags", []) if tag["Key"].startswith(JOURNAL_PREFIX)] == []
    nodes = group["nodes"]
    assert len(nodes) == sizes_before[2]
    assert {node["ami"] for node in nodes} == {target_ami}
    assert [node["name"] for node in nodes if node["unschedulable"] or not node["ready"]] == []
    assert report["pods_lost"] == []
    assert report["pdb_violations"] == []
