# -*- coding: utf-8 -*-
# Copyright: Contributors to the eksops.nodegroup project
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""eksops.nodegroup.node_replace: the upgrade phase's batch loop (drain, terminate through the Auto Scaling group,
wait) in one process on the controller (issue 11 item 4; docs/architecture.md says why).

The work is node_drain's and asg_instance_terminate's own code (module_utils/steps/node_drain.py, steps/asg_instance_terminate.py),
looped by module_utils/phases/replace/loop.py; this file only validates the options, reports progress through Display
(ansible-playbook's output and AWX's job output) and builds the task result as the modules build theirs.
"""

from __future__ import annotations

import time

from ansible.utils.display import Display

from ansible_collections.eksops.nodegroup.plugins.module_utils.errors import UpgradeError
from ansible_collections.eksops.nodegroup.plugins.module_utils.host.module import error_result
from ansible_collections.eksops.nodegroup.plugins.module_utils.phases.replace.loop import Batch, ReplaceFailed, ReplaceState
from ansible_collections.eksops.nodegroup.plugins.module_utils.gates.safe_points import SafePoints
from ansible_collections.eksops.nodegroup.plugins.module_utils.phases.replace.quarantine import CarriedOver, start_quarantine
from ansible_collections.eksops.nodegroup.plugins.module_utils.plan.quarantine_book import check_quarantine_options
from ansible_collections.eksops.nodegroup.plugins.module_utils.phases.replace.health_gate import validate_gates
from ansible_collections.eksops.nodegroup.plugins.module_utils.phases.replace.phase import (
    cordon_old_nodes,
    full_argument_spec,
    next_batch_source,
    old_instances_left,
    plan_line,
    plan_phase,
    replace_loop,
    step_options,
    validate_schedule,
)
from ansible_collections.eksops.nodegroup.plugins.plugin_utils.controller_action import ControllerAction

display = Display()


def _log(line: str) -> None:
    display.vvvv("node_replace: %s" % line)


class ActionModule(ControllerAction):
    """The upgrade phase on the controller (ControllerAction)."""

    def run(self, tmp=None, task_vars=None):
        result = super().run(tmp, task_vars)
        del tmp
        params = self.validated_params(full_argument_spec(),
                                       mutually_exclusive=[["max_unavailable", "max_unavailable_percentage"],
                                                           ["batches", "steps", "max_surge"]])
        warnings = []
        clients = self.clients(params, "node_replace")
        result.update(self.while_job_lives(clients, lambda: self._phase(params, clients, warnings)))
        if warnings:
            result["warnings"] = warnings
        return clients.with_resource_actions(result)

    def _phase(self, params, clients, warnings):
        """The task result's changed, replace and, on failure, failed and the error."""
        try:
            params, steps, plan, loop, next_batch, safe_point, judge_first, quarantine = self._prepare(
                params, clients, warnings)
        except UpgradeError as err:
            clients.stop_lease_heartbeats()
            result = dict(failed=True, changed=False, replace=ReplaceState().to_dict())
            result.update(error_result(err))
            return result
        try:
            return self._replace(params, steps, plan, clients, loop, next_batch, safe_point, judge_first, quarantine,
                                 warnings)
        finally:
            clients.stop_lease_heartbeats()

    def _prepare(self, params, clients, warnings):
        """Every check before any change: the plan (when the task gives none, printed) and the schedule (SPEC B1).
        Returns (params with the plan, the steps' options, the plan or None, the loop, its next_batch, its safe
        point, what the phase runs first, the quarantine of undrainable nodes or None, issue 27 item 5)."""
        check_mode = bool(self._task.check_mode)
        validate_schedule(params)
        check_quarantine_options(params["undrainable_nodes"], params["max_quarantined_nodes"])
        validate_gates(params)
        # The steps' options, typed and checked once for the phase (issue 26 item 4).
        steps = step_options(params, check_mode)
        # Issue 27 items 2-4: the safe points' options, and that every alarm named exists.
        safe_points = SafePoints.from_params(params, lambda: clients.aws("cloudwatch"))
        # Issue 27 items 1, 5 and 7: the nodes an earlier run quarantined leave the plan before it is ordered.
        carried = CarriedOver(params, clients)
        params, plan, group = plan_phase(params, clients, warnings.append, carried)
        steps = steps.of_run(params["run_id"])
        if plan is not None:
            self._progress(plan_line(plan))
        node_names = dict(params["node_names"])
        params, quarantine = start_quarantine(params, clients, node_names, self._progress, carried,
                                              steps.drain.engine.run_id)
        # Issue 27 items 1 and 7: how many of the plan's first batches are the canary's, which end a zone.
        order = plan or {}
        schedule, next_batch = next_batch_source(params, clients, check_mode, warnings.append, node_names, group,
                                                 order)
        if quarantine is not None:
            quarantine.attach(next_batch)
        loop, next_batch, safe_point, judge_first = replace_loop(
            params, steps, clients, check_mode, bool(self._task.diff), warnings.append, _log, self._progress,
            next_batch, node_names, safe_points, group, quarantine, order)
        loop.state.schedule = schedule
        return params, steps, plan, loop, next_batch, safe_point, judge_first, quarantine

    def _replace(self, params, steps, plan, clients, loop, next_batch, safe_point, judge_first, quarantine, warnings):
        """The phase: an earlier run's failed health gate judged again (``judge_first``), every old node cordoned
        (with cordon_old_nodes), the batches, the nodes still held in quarantine (NodesQuarantined), then (when
        planned here) the old instances left. Returns the task result's changed, replace and, on failure, failed,
        the error and the failing step's own result."""
        check_mode = bool(self._task.check_mode)
        planned = dict(plan=plan, asg_name=params["asg_name"]) if plan is not None else {}
        cordoned = None
        cleared = False
        result = {}
        try:
            # Issue 27 item 1: first of all, so that a judgment that fails cordons nothing, and the safe point of
            # batch 1 is checked after it (it may take health_gate_timeout).
            cleared = judge_first()
            if params["cordon_old_nodes"] and params["batches"]:
                # Issue 27: a stop before the first batch leaves nothing cordoned (the batch placed in the plan's
                # order: its soak and gate count).
                safe_point.check(loop.state, Batch(params["batches"][0]).ordered(1, plan))
                cordoned = cordon_old_nodes(params, steps, clients, check_mode, bool(self._task.diff), warnings.append, _log)
                if cordoned is not None:
                    loop.state.cordoned = dict(at=time.time(), nodes=sorted(cordoned["drain"]["nodes"]))
                    self._progress("%s %d old nodes and labelled them out of the load balancers before the first "
                                   "batch, so that no pod moves onto a node still to be replaced" % (
                                       "would cordon" if check_mode else "cordoned", len(cordoned["drain"]["nodes"])))
            loop.run(next_batch)
            if quarantine is not None:
                quarantine.finish(loop.state)
            if plan is not None and not check_mode:
                planned["old_instances_left"] = old_instances_left(params, clients, warnings.append)
        except ReplaceFailed as failure:
            # The failing step's own result (its drain or termination key) at the top, as the module's fail_json
            # put it: the roles' failure handling reads ansible_failed_result.drain.nodes.
            result.update(failure.failed_step)
            result.update(failed=True, replace=failure.state.to_dict())
            result.update(error_result(failure.error))
        except UpgradeError as err:
            # The judgment of an earlier run's failed gate, the safe point before the cordon, or the check after the
            # loop: every batch was done.
            result.update(failed=True, replace=loop.state.to_dict())
            result.update(error_result(err))
        else:
            result["replace"] = loop.state.to_dict()
        # Each batch cordons, drains and terminates (or would, in check mode); so does the cordon of every old node;
        # a stop at a safe point may give back old nodes (uncordoned_nodes), a rerun's before its first batch too;
        # a failed gate's record removed changes the journal, even when no batch was left.
        result["changed"] = bool(result["replace"]["batches"] or (cordoned or {}).get("changed") or cleared
                                 or result.get("uncordoned_nodes"))
        result["replace"].update(planned)
        return result

    def _progress(self, line: str) -> None:
        display.display(line)
