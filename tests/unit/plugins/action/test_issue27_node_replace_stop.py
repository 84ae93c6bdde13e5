# -*- coding: utf-8 -*-
# Copyright: Contributors to the eksops.nodegroup project
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Issue 27: node_replace's result when a safe point stops the run and gives back old nodes
(phases/replace/batch_safe_point.py): the stop changed the cluster."""

from __future__ import annotations

from types import SimpleNamespace

from ansible_collections.eksops.nodegroup.plugins.module_utils.errors import UpgradeError
from ansible_collections.eksops.nodegroup.plugins.module_utils.phases.replace.loop import ReplaceState

ACTION = "node_replace"


def test_issue27_a_stop_that_gave_back_nodes_is_a_change(controller):
    """A stop before the first batch of a rerun (no batch, no cordon of its own) that uncordoned the nodes an
    earlier run cordoned changed the cluster: changed is true; false when it gave back nothing."""

    def replaced(uncordoned):
        action = controller.action.ActionModule.__new__(controller.action.ActionModule)
        action._task = SimpleNamespace(check_mode=False, diff=False)

        def run(_next_batch):
            raise UpgradeError("UpgradePaused", "Paused.", uncordoned_nodes=uncordoned)
        loop = SimpleNamespace(state=ReplaceState(), run=run)
        params = dict(cordon_old_nodes=False, batches=[], asg_name="workers")
        return action._replace(params, None, None, None, loop, None, None, lambda: False, None, [])

    stopped = replaced(["old-3"])
    assert stopped["failed"] and stopped["uncordoned_nodes"] == ["old-3"] and stopped["changed"] is True
    assert replaced([])["changed"] is False
