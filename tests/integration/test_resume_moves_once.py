# -*- coding: utf-8 -*-
# Copyright: Contributors to the eksops.nodegroup project
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Issue 25 item 1 (SPEC W5, B1): a rerun after a killed upgrade still moves each pod once.

The upgrade playbook (schedule once, the default) is SIGKILLed with every process it started at each phase boundary,
then the same command is run again; the evictions the cluster shows over both runs are counted. Before the fix,
killed two batches into the upgrade, the rerun's scale-up raised the desired capacity back to the size before the
upgrade plus the surge, ignoring the capacity the schedule had lowered it to with two decrementing terminations,
and the scale-down then drained the nodes of that second surge, which held moved pods: 1.33 moves per old pod
measured on a group of 6 nodes surged to 12 (the issue saw 1.25-1.6), against 1.00 in a clean run; on this
module's group 1.25-1.33 killed between batches and 1.17-1.33 mid-batch. Now 1.0 at every kill point below.

Each phase boundary, and why the rerun moves each pod once (the kill itself forces a second move nowhere):

- killed in the setup or the scale-up before the journal records the surge: nothing to resume, a fresh scale-up;
- killed in the scale-up after the journal recorded the surge, before or after the capacity raise (SPEC C3: journal
  first): the rerun reaches the desired capacity recorded, not recomputed (a relaunch after a capacity error
  included; a no-op when it is there), chooses the surplus from the new nodes as the first run would (no pod has
  moved yet) or keeps the surplus it marked;
- killed in the upgrade phase, mid-batch or between batches: the surge is in place; the rerun's scale-up keeps the
  desired capacity the schedule set (after its decrements, or the one a decrementing termination under way leaves)
  and adds nothing, keeps the surplus marks and launches no node; the old node being drained is drained again (its
  pods that had not left yet move once); the batches go on from the group as it is;
- killed in the scale-down: the journal says scale_down; the rerun removes the surplus it marked (empty, cordoned
  since the scale-up) and restores the sizes.

KILL_POINTS runs the scale-up after its raise, between batches, mid-batch and the scale-down; the kills in the setup
and as the scale-up's journal is written are test_crash_resume.py's (convergence), the decrements under way and the
relaunch unit tests' (tests/unit/plugins/modules/test_asg_surge.py, test_asg_instance_terminate.py).

One sandbox for the module, the cases taking turns between its two AMIs: 5 nodes over 3 AZs (2, 2, 1),
max_unavailable 1, so EKS's surge of 2 x 3 AZs takes the group to 11, one new node of the AZ that had one is the
surplus the scale-down removes, and every old node's termination lowers the desired capacity.
"""

from __future__ import annotations

import json
import signal
import threading
import time

import pytest

from asg_helpers import journal_tags
from nodegroup_state import count_evictions, image_id_by_name, nodegroup_nodes, workers_asg
from sandbox_helpers import REPO_ROOT, kill_playbook, module_sandbox, run_playbook, start_playbook, wait_for

AMI_129 = "amazon-eks-node-al2023-x86_64-standard-1.29-v20240101"
AMI_130 = "amazon-eks-node-al2023-x86_64-standard-1.30-v20240615"
SCENARIO = {
    "name": "resume", "availability_zones": ["us-west-2a", "us-west-2b", "us-west-2c"],
    "amis": [{"name": AMI_129, "kubernetes_version": "1.29"}, {"name": AMI_130, "kubernetes_version": "1.30"}],
    "nodegroups": [{"name": "workers", "kind": "self_managed", "ami": AMI_129, "min_size": 3, "max_size": 12,
                    "desired_capacity": 5}],
    "workloads": [{"kind": "Deployment", "name": "web", "replicas": 12, "pdb": {"max_unavailable": 2}},
                  {"kind": "DaemonSet", "name": "node-agent", "namespace": "kube-system"}],
}
PLAYBOOK = REPO_ROOT / "playbooks" / "upgrade_nodegroup.yml"
# The cases take turns between the scenario's two AMIs: every other run goes back to the older one.
ARGS = {"cluster_name": "resume", "nodegroup_name": "workers", "max_unavailable": 1, "post_drain_wait": 1,
        "drain_timeout": 120, "allow_downgrade": True}
RUN_TIMEOUT = 420

resume = module_sandbox(SCENARIO)


def _pods_to_move(sandbox) -> int:
    """The pods the upgrade moves: those on the group's nodes that no DaemonSet owns."""
    nodes = {node.metadata.name for node in nodegroup_nodes(sandbox)}
    return sum(1 for pod in sandbox.core_v1().list_pod_for_all_namespaces().items
               if pod.spec.node_name in nodes
               and not any(ref.kind == "DaemonSet" for ref in pod.metadata.owner_references or []))


def _kill_when(sandbox, extra_vars, marker, ready, evicted) -> None:
    """Run the playbook; SIGKILL it with every process it started once a line holds every string of ``marker``
    and then ``ready(sandbox, evicted, evictions seen when the line came)`` holds (checked every 0.3 s for 60 s)."""
    lines = []
    process = start_playbook(sandbox, PLAYBOOK, extra_vars, start_new_session=True)
    with process:
        deadline = time.monotonic() + RUN_TIMEOUT
        for line in process.stdout:
            lines.append(line)
            if all(part in line for part in marker) or time.monotonic() > deadline:
                wait_for(lambda seen=len(evicted): ready(sandbox, evicted, seen), 60,
                         "the kill point after %r" % (marker,))
                kill_playbook(process, sandbox)
                break
        process.wait(timeout=30)
    output = "".join(lines)
    assert process.returncode == -signal.SIGKILL and all(part in output for part in marker), output[-3000:]


def _journal(sandbox) -> dict[str, str]:
    return journal_tags(workers_asg(sandbox))


# kill point -> (the line that starts it, what holds when the playbook is killed (sandbox, the evictions, how many
# there were at the line), the journal phase the kill leaves)
KILL_POINTS = {
    "scale_up_after_the_raise": (("Scale up the Auto Scaling group",),
                                 lambda sandbox, evicted, seen: workers_asg(sandbox)["DesiredCapacity"] == 11,
                                 "scale_up"),
    "between_batches": (("batch 2/", " ended at "), lambda sandbox, evicted, seen: True, "upgrade"),
    # once the batch's drain has evicted a pod
    "mid_batch": (("batch 3/", " started at "), lambda sandbox, evicted, seen: len(evicted) > seen, "upgrade"),
    "scale_down": (("Remove the surplus nodes, restore the group",),
                   lambda sandbox, evicted, seen: _journal(sandbox).get("phase") == "scale_down", "scale_down"),
}


@pytest.mark.timeout(2 * RUN_TIMEOUT + 60)
@pytest.mark.parametrize("kill_point", list(KILL_POINTS))
def test_issue25_item1_resume_moves_each_pod_once(resume, tmp_path, kill_point):
    """Killed at ``kill_point`` (the module docstring's cases), the rerun converges with one move per old pod."""
    sandbox = resume
    marker, ready, phase = KILL_POINTS[kill_point]
    asg = workers_asg(sandbox)
    sizes_before = (asg["MinSize"], asg["MaxSize"], asg["DesiredCapacity"])
    per_az_before = sorted(i["AvailabilityZone"] for i in asg["Instances"])
    old_ami = {node["ami"] for node in sandbox.report()["nodegroups"]["workers"]["nodes"]}
    target_ami = image_id_by_name(sandbox, AMI_129) if old_ami == {image_id_by_name(sandbox, AMI_130)} \
        else image_id_by_name(sandbox, AMI_130)
    pods = _pods_to_move(sandbox)
    stop = threading.Event()
    evicted, watcher = count_evictions(sandbox, stop)
    report_path = tmp_path / "report.json"
    extra_vars = dict(ARGS, image_id=target_ami, upgrade_report_path=str(report_path))

    try:
        _kill_when(sandbox, extra_vars, marker, ready, evicted)
        assert _journal(sandbox).get("phase") == phase
        # The person who knows the run is gone may end its lease at once (docs; test_crash_resume.py).
        sandbox.client("autoscaling").delete_tags(Tags=[dict(
            ResourceId=asg["AutoScalingGroupName"], ResourceType="auto-scaling-group", Key="eksops.nodegroup/lease")])
        rerun = run_playbook(sandbox, PLAYBOOK, extra_vars, timeout=RUN_TIMEOUT)
    finally:
        stop.set()
        watcher.join(10)
    assert rerun.returncode == 0, rerun.stdout[-5000:] + rerun.stderr[-2000:]

    moves = round(len(evicted) / pods, 2)
    print("%s: %s moves per old pod after a resume (%d evictions, %d pods)" % (kill_point, moves, len(evicted), pods))
    assert moves == 1.0, (len(evicted), pods)
    assert json.loads(report_path.read_text())["status"] == "succeeded"
    # Converged: every node on the target, the sizes and the AZs as before, no journal, nothing lost.
    asg = workers_asg(sandbox)
    assert (asg["MinSize"], asg["MaxSize"], asg["DesiredCapacity"]) == sizes_before
    assert sorted(i["AvailabilityZone"] for i in asg["Instances"]) == per_az_before
    assert journal_tags(asg) == {} and asg.get("SuspendedProcesses", []) == []
    report = sandbox.report()
    nodes = report["nodegroups"]["workers"]["nodes"]
    assert len(nodes) == sizes_before[2] and {node["ami"] for node in nodes} == {target_ami}
    assert [node["name"] for node in nodes if node["unschedulable"] or not node["ready"]] == []
    assert report["pods_lost"] == [] and report["pdb_violations"] == []
