# -*- coding: utf-8 -*-
# Copyright: Contributors to the eksops.nodegroup project
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Issue 10 item 23: after the cluster autoscaler moved the group (ClusterAutoscalerActive), every rerun failed
the same way and the message asked for sizes to be set by hand. A rerun with accept_current_capacity=true
finishes: the autoscaler's extra nodes stay on top of the original size, MinSize/MaxSize and processes are
restored, the upgrade's scale-in protection is removed and the journal cleared."""

from __future__ import annotations

import json

from asg_helpers import journal_tags, workers_asg
from sandbox_helpers import REPO_ROOT, run_playbook

SCENARIO = "fault_autoscaler"
PLAYBOOK = REPO_ROOT / "playbooks" / "upgrade_nodegroup.yml"
ARGS = {"cluster_name": "fault_autoscaler", "nodegroup_name": "workers", "kubernetes_version": "1.30",
        "post_drain_wait": 0, "drain_timeout": 30}


def test_a_rerun_accepting_the_autoscalers_capacity_finishes_the_upgrade(sandbox, tmp_path):
    first_report = tmp_path / "first.json"
    first = run_playbook(sandbox, PLAYBOOK, dict(ARGS, upgrade_report_path=str(first_report)))
    assert first.returncode != 0
    error = json.loads(first_report.read_text())["error"]
    assert error["code"] == "ClusterAutoscalerActive" and "accept_current_capacity=true" in error["resume"]
    moved = workers_asg(sandbox)["DesiredCapacity"]
    # 3 + a surge of 6 + its 2, less the 3 terminations the default schedule once decremented (SPEC B1: one new
    # node per AZ kept, the 3 other new ones surplus, removed first at the scale-down).
    assert moved == 8, "the sandbox autoscaler did not act"

    report_path = tmp_path / "second.json"
    second = run_playbook(sandbox, PLAYBOOK, dict(ARGS, accept_current_capacity=True,
                                                  upgrade_report_path=str(report_path)))
    assert second.returncode == 0, second.stdout[-4000:]
    assert json.loads(report_path.read_text())["status"] == "succeeded"
    asg = workers_asg(sandbox)
    assert (asg["MinSize"], asg["MaxSize"], asg["DesiredCapacity"]) == (1, 9, 5)
    assert journal_tags(asg) == {} and asg.get("SuspendedProcesses", []) == []
    assert not any(i["ProtectedFromScaleIn"] for i in asg["Instances"])
    report = sandbox.report()
    assert report["pods_lost"] == [] and report["pdb_violations"] == []
