# -*- coding: utf-8 -*-
# Copyright: Contributors to the eksops.nodegroup project
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Issue 25 item 3: --check shows the run that will happen. Under the default schedule once the dry run printed the
plan's EKS-style random batches "in this order with -e nodegroup_upgrade_seed=N", while the run took the schedule's
batches: the printed order was not the order of a real run with that seed."""

from __future__ import annotations

import json

from sandbox_helpers import REPO_ROOT, run_playbook

SCENARIO = "rolling"
ARGS = {"cluster_name": "rolling", "nodegroup_name": "workers", "kubernetes_version": "1.30", "max_unavailable": 2,
        "post_drain_wait": 1, "drain_timeout": 120, "nodegroup_upgrade_seed": 7}


def test_issue25_item3_a_dry_run_shows_the_batches_a_run_with_its_seed_takes(sandbox, tmp_path):
    playbook = REPO_ROOT / "playbooks" / "upgrade_nodegroup.yml"
    planned_path, done_path = tmp_path / "planned.json", tmp_path / "done.json"
    checked = run_playbook(sandbox, playbook, dict(ARGS, upgrade_report_path=str(planned_path)), check=True)
    assert checked.returncode == 0, checked.stdout[-4000:]
    plan = json.loads(planned_path.read_text())["plan"]
    assert plan["schedule"]["schedule"] == "once" and len(plan["batches"]) == 3
    for names in plan["batch_nodes"]:
        assert "batch: " + ", ".join(names) in checked.stdout

    ran = run_playbook(sandbox, playbook, dict(ARGS, upgrade_report_path=str(done_path)))
    assert ran.returncode == 0, ran.stdout[-4000:]
    replaced = json.loads(done_path.read_text())["replaced_instances"]
    done_batches, start = [], 0
    for batch in plan["batches"]:
        done_batches.append(sorted(replaced[start:start + len(batch)]))
        start += len(batch)
    assert done_batches == [sorted(batch) for batch in plan["batches"]] and start == len(replaced)
