# -*- coding: utf-8 -*-
# Copyright: Contributors to the eksops.nodegroup project
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Following EKS's update (issue 29 item 3, SPEC W4): one loop for as long as EKS works, progress lines a person
reads while it runs; pure of AWS (the calls are replaced)."""

from __future__ import annotations

from unittest import mock

from ansible_collections.eksops.nodegroup.plugins.module_utils.host import clock as clocks
from ansible_collections.eksops.nodegroup.plugins.module_utils.host.waiter import Waiter
from ansible_collections.eksops.nodegroup.plugins.module_utils.steps import eks_nodegroup_update as step

from ..fakes import FakeClock

NODEGROUP = {"clusterName": "demo", "nodegroupName": "workers"}


def test_w4_an_update_is_followed_past_300_polls_to_its_end():
    """The role's old task file included itself per poll and died of RecursionError after about 200."""
    answers = [dict(id="u-1", status="InProgress")] * 400 + [dict(id="u-1", status="Successful")]
    polls = []
    clock = FakeClock()
    with mock.patch.object(clocks, "SYSTEM_CLOCK", clock), \
            mock.patch.object(step, "describe_update", side_effect=answers):
        last = step.follow_update(None, NODEGROUP, dict(id="u-1", status="InProgress"), waiter=Waiter(step.update_finished, 1e9),
                                  poll_interval=15, on_poll=polls.append)
    assert last["status"] == "Successful" and len(polls) == 401 and clock.sleeps == [15] * 401


def test_w4_the_follow_stops_at_its_deadline_with_the_update_still_in_progress():
    clock = FakeClock()
    with mock.patch.object(clocks, "SYSTEM_CLOCK", clock), \
            mock.patch.object(step, "describe_update", return_value=dict(id="u-1", status="InProgress")):
        last = step.follow_update(None, NODEGROUP, dict(id="u-1", status="InProgress"), waiter=Waiter(step.update_finished, 40),
                                  poll_interval=15)
    assert last["status"] == "InProgress" and clock.sleeps == [15, 15, 10]


def test_w4_a_progress_line_when_the_count_changes_with_the_time_left_at_the_pace_seen():
    lines = []
    counts = iter([(6, 6), (6, 6), (6, 0), (6, 0), (6, 2), (6, 3)])
    clock = FakeClock()

    def progress(_autoscaling, _nodegroup):
        clock.advance(300)
        total, updated = next(counts)
        return dict(nodes_total=total, nodes_updated=updated)

    with mock.patch.object(clocks, "SYSTEM_CLOCK", clock), mock.patch.object(step, "read_progress", progress):
        follow = step.ProgressLines(None, NODEGROUP, lines.append)
        for _poll in range(6):
            follow(dict(id="u-1", status="InProgress"))
    assert lines == [
        "EKS update u-1 of node group workers: InProgress; 6 of 6 nodes run the new launch template version",
        "EKS update u-1 of node group workers: InProgress; 0 of 6 nodes run the new launch template version",
        # 2 nodes in the 600 s since the count was lowest (EKS had moved the group: 0 of 6); 4 left at that pace
        "EKS update u-1 of node group workers: InProgress; 2 of 6 nodes run the new launch template version, "
        "about 20 min left",
        "EKS update u-1 of node group workers: InProgress; 3 of 6 nodes run the new launch template version, "
        "about 15 min left",
    ]
