# -*- coding: utf-8 -*-
# Copyright: Contributors to the eksops.nodegroup project
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Issue 11 item 4: the upgrade phase shows one line per batch start and end as it happens, through Ansible's
Display, where AWX's callback reads job output (its awx_display wraps Display.display in the main process, as
callback_plugins/display_recorder.py does here). The lines must arrive while the batch loop's task runs, before
its result, and batch k must start after batch k-1 ended (SPEC U5: max_unavailable nodes at a time)."""

from __future__ import annotations

import json
import re

from nodegroup_state import call_counts, changes_by_the_collection
from sandbox_helpers import CALLBACK_PLUGINS, REPO_ROOT, run_module, run_playbook

SCENARIO = "rolling"
PLAYBOOK = REPO_ROOT / "playbooks" / "upgrade_nodegroup.yml"
TASK = "Replace the old nodes"
LINE = re.compile(r"^batch (\d+)/(\d+) (started|ended) at \d\d:\d\d:\d\dZ")


def test_check_mode_runs_every_batch_and_changes_nothing(sandbox):
    """Runs first (same sandbox): the steps in check mode report what they would do (K5, issue 10 item 9)."""
    [asg] = [group for group in sandbox.client("autoscaling").describe_auto_scaling_groups()["AutoScalingGroups"]
             if group["AutoScalingGroupName"].startswith("workers")]
    ids = sorted(i["InstanceId"] for i in asg["Instances"])[:4]
    before = call_counts(sandbox)
    result = run_module(sandbox, "node_replace", {
        "cluster_name": "rolling", "nodegroup_name": "workers", "batches": [ids[:2], ids[2:]], "post_drain_wait": 1},
        check=True)
    assert not result.get("failed"), result
    assert result["replace"]["replaced_instances"] == ids and len(result["replace"]["batches"]) == 2
    assert changes_by_the_collection(before, call_counts(sandbox)) == {}
    # The nodes were not drained (check mode): the terminate step says it would refuse them, as the module does.
    assert any("refusing to terminate undrained instances" in warning and "is not cordoned" in warning
               for warning in result.get("warnings", [])), result


def test_batch_lines_arrive_as_the_batches_run(sandbox, tmp_path):
    record = tmp_path / "display.json"
    result = run_playbook(sandbox, PLAYBOOK, {
        "cluster_name": "rolling", "nodegroup_name": "workers", "kubernetes_version": "1.30", "max_unavailable": 2,
        "drain_timeout": 120, "post_drain_wait": 1}, env={
            "ANSIBLE_CALLBACK_PLUGINS": str(CALLBACK_PLUGINS), "ANSIBLE_CALLBACKS_ENABLED": "display_recorder",
            "DISPLAY_RECORD_FILE": str(record)})
    assert result.returncode == 0, result.stdout[-4000:] + result.stderr[-2000:]
    seen = json.loads(record.read_text())
    done = [at for at, task, status in seen["results"] if task.endswith(TASK) and status == "ok"]
    assert len(done) == 1, seen["results"]
    batches = {}
    for at, line in seen["lines"]:
        match = LINE.match(line)
        if match:
            batches.setdefault(int(match.group(1)), {})[match.group(3)] = at
            total = int(match.group(2))
            assert at < done[0], "%r shown after the task's result" % line
    assert total == 3 and sorted(batches) == [1, 2, 3]  # 6 old nodes, 2 at a time
    for number, times in batches.items():
        assert times["started"] < times["ended"]
        if number > 1:
            assert batches[number - 1]["ended"] <= times["started"]
    # As it happens: the first batch ended well before the task's result, not all lines at the end.
    assert done[0] - batches[1]["ended"] > 1.0
    # The lines are in the plain ansible-playbook output too, with the node names.
    assert re.search(r"batch 1/3 started at \S+: ip-\S+, ip-\S+ \(i-\w+, i-\w+\)", result.stdout), result.stdout[-3000:]
