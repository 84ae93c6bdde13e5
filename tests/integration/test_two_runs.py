"""Issue 10 item 21: two runs on one node group at once (AWX's "allow simultaneous", two engineers at two
terminals). Before, a run started 18 s into another resumed its journal and both drained and terminated side
by side; two started together fought. Now one holds the group's lease and the other refuses, before changing
anything, naming the run that holds it."""

from __future__ import annotations

import json
import subprocess

from asg_helpers import journal_tags, workers_asg
from sandbox_helpers import BIN_DIR, REPO_ROOT, ansible_env

SCENARIO = "surge5"


def start(sandbox, report_path):
    extra_vars = {"cluster_name": "surge5", "nodegroup_name": "workers", "kubernetes_version": "1.30",
                  "max_unavailable": 2, "drain_timeout": 60, "post_drain_wait": 0,
                  "upgrade_report_path": str(report_path)}
    return subprocess.Popen(  # pylint: disable=consider-using-with
        [str(BIN_DIR / "ansible-playbook"), str(REPO_ROOT / "playbooks" / "upgrade_nodegroup.yml"),
         "-e", json.dumps(extra_vars)], env=ansible_env(sandbox), cwd=REPO_ROOT,
        stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)


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
