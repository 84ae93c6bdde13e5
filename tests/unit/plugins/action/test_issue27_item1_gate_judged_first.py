# -*- coding: utf-8 -*-
# Copyright: Contributors to the eksops.nodegroup project
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Issue 27 item 1 (SPEC O1, O4, O5, U4): node_replace's phase judges what an earlier run's failed health gate
recorded before anything else: before the safe point of its first batch (pause, window, alarm) and before the
cordon of every old node. The phase's parts are fakes that record their order; the action's own _replace runs
them."""

from __future__ import annotations

from types import SimpleNamespace

from ansible_collections.eksops.nodegroup.plugins.module_utils.errors import HEALTH_GATE_FAILED, UpgradeError
from ansible_collections.eksops.nodegroup.plugins.module_utils.phases.replace.loop import ReplaceState

# The action plugin the controller and run fixtures (conftest.py) load.
ACTION = "node_replace"


def replace(controller, monkeypatch, events, judged, batches=(("i-1",),)):
    """The action's _replace over fakes that append to ``events``; ``judged()`` stands for the first judgment."""
    def cordon(*_args):
        events.append("cordon")
        return dict(changed=True, drain=dict(nodes=["node-1"]))

    def judge():
        events.append("judge")
        return judged()

    monkeypatch.setattr(controller.action, "cordon_old_nodes", cordon)
    task = controller.Task()
    task.check_mode = False
    action = controller.action.ActionModule(task, None, None, None, None, None)
    loop = SimpleNamespace(state=ReplaceState(), run=lambda next_batch: events.append("batches"))
    safe_point = SimpleNamespace(check=lambda state, batch: events.append("safe point"))
    params = dict(cordon_old_nodes=True, batches=[list(batch) for batch in batches], asg_name="workers")
    return action._replace(params, None, None, None, loop, None, safe_point, judge, None, [])


def test_issue27_item1_o5_u4_a_rerun_judges_the_failed_gate_before_the_safe_point_and_the_cordon(
        controller, monkeypatch):
    """The judgment (up to health_gate_timeout) ran inside the first next_batch, after the safe point of batch 1 and
    the cordon of every old node: batch 1 then started up to 600 s after its safe point (a pause, the window, an
    alarm unchecked), and a judgment that refused to go on came after every old node was cordoned."""
    events = []
    result = replace(controller, monkeypatch, events, lambda: False)
    assert events == ["judge", "safe point", "cordon", "batches"] and not result.get("failed")

    def fails():
        raise UpgradeError(HEALTH_GATE_FAILED, "Before the first batch, the health gate an earlier run failed, "
                           "judged again: ...", workloads=["Deployment default/web"])
    events = []
    result = replace(controller, monkeypatch, events, fails)
    assert events == ["judge"], "nothing checked, cordoned or drained after a failed judgment"
    assert result["failed"] and result["code"] == HEALTH_GATE_FAILED and result["changed"] is False
    assert result["workloads"] == ["Deployment default/web"] and result["replace"]["batches"] == []


def test_issue27_item1_a_record_removed_by_a_run_with_no_batch_left_is_a_change(controller, monkeypatch):
    """The record removed (the journal's tag) changed the group, even when the rerun had no batch left: the task
    said changed false."""
    events = []
    result = replace(controller, monkeypatch, events, lambda: True, batches=())
    assert events == ["judge", "batches"] and result["changed"] is True and not result.get("failed")
    events = []
    assert replace(controller, monkeypatch, events, lambda: False, batches=())["changed"] is False
