# -*- coding: utf-8 -*-
# Copyright: Contributors to the eksops.nodegroup project
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Issue 10 item 21: two runs on one node group at once (AWX's "allow simultaneous", two engineers at two
terminals). Before, a run started 18 s into another resumed its journal and both drained and terminated side
by side; two started together fought. Now one holds the group's lease and the other refuses, before changing
anything, naming the run that holds it."""

from __future__ import annotations

import json
import time

from asg_helpers import journal_tags, workers_asg
from sandbox_helpers import REPO_ROOT, kill_playbook, start_playbook

SCENARIO = "surge5"


def start(sandbox, report_path, **extra):
    extra_vars = {"cluster_name": "surge5", "nodegroup_name": "workers", "kubernetes_version": "1.30",
                  "max_unavailable": 2, "drain_timeout": 60, "post_drain_wait": 0,
                  "upgrade_report_path": str(report_path), **extra}
    return start_playbook(sandbox, REPO_ROOT / "playbooks" / "upgrade_nodegroup.yml", extra_vars,
                          start_new_session=True)


def test_two_runs_started_together_one_upgrades_the_other_refuses(sandbox, tmp_path):
    runs = [start(sandbox, tmp_path / ("run%d.json" % index)) for index in (1, 2)]
    outputs = []
    try:
        for run in runs:
            outputs.append(run.communicate(timeout=900)[0])
    finally:
        for run in runs:
            if run.poll() is None:
                run.kill()
    reports = [json.loads((tmp_path / ("run%d.json" % index)).read_text()) for index in (1, 2)]
    statuses = sorted(report["status"] for report in reports)
    assert statuses == ["failed", "succeeded"], [o[-2500:] for o in outputs]
    winner = next(r for r in reports if r["status"] == "succeeded")
    loser = next(r for r in reports if r["status"] == "failed")
    assert loser["error"]["code"] == "UpgradeInProgress", loser["error"]
    assert winner["run_id"] in loser["error"]["msg"] or "no journal yet" in loser["error"]["msg"]
    assert loser["replaced_instances"] == [] and loser["pods_evicted"] == 0
    assert len(winner["replaced_instances"]) == 5
    report = sandbox.report()
    assert report["pods_lost"] == [] and report["pdb_violations"] == []
    asg = workers_asg(sandbox)
    assert asg["DesiredCapacity"] == 5 and journal_tags(asg) == {}
    # no instance was terminated twice or by both: the upgrade made exactly its own terminations
    terminations = sum(count for key, count in report["aws_calls"].items()
                       if key.startswith("TerminateInstanceInAutoScalingGroup"))
    assert terminations == 5 + winner["surplus_removed"].__len__()


def test_a_killed_runs_lease_refuses_the_immediate_rerun_until_it_ends(sandbox, tmp_path):
    """A cancelled AWX job (its process group killed) keeps its lease: the rerun right after is refused, saying
    when the lease ends; once it has ended (here: the tag deleted, as the docs allow when the run is known to be
    gone), the rerun takes over the journal and finishes. Runs after the test above: back to 1.29."""
    back = {"kubernetes_version": "1.29", "allow_downgrade": True}
    killed = start(sandbox, tmp_path / "killed.json", **back)
    deadline = time.time() + 300
    while journal_tags(workers_asg(sandbox)).get("phase") != "upgrade" and time.time() < deadline:
        time.sleep(0.3)
    kill_playbook(killed, sandbox)
    killed.communicate(timeout=60)
    lease = journal_tags(workers_asg(sandbox))["lease"]

    refused = start(sandbox, tmp_path / "refused.json", **back)
    refused.communicate(timeout=600)
    error = json.loads((tmp_path / "refused.json").read_text())["error"]
    assert error["code"] == "UpgradeInProgress" and lease.split(" ")[1] in error["msg"], error

    asg = workers_asg(sandbox)
    sandbox.client("autoscaling").delete_tags(Tags=[dict(ResourceId=asg["AutoScalingGroupName"],
                                                         ResourceType="auto-scaling-group",
                                                         Key="eksops.nodegroup/lease")])
    rerun = start(sandbox, tmp_path / "rerun.json", **back)
    output = rerun.communicate(timeout=900)[0]
    assert rerun.returncode == 0, output[-3000:]
    assert json.loads((tmp_path / "rerun.json").read_text())["status"] == "succeeded"
    assert journal_tags(workers_asg(sandbox)) == {}
    report = sandbox.report()
    assert report["pods_lost"] == [] and report["pdb_violations"] == []
