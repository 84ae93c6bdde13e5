# -*- coding: utf-8 -*-
# Copyright: Contributors to the eksops.nodegroup project
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""upgrade_gate's body (issue 27 items 2-4): the run's safe points (gates/safe_points.py) checked once, between two
phases, as node_replace checks them before each batch. Read-only: it finds the node group, reads its pause request
(a self-managed group's; an EKS managed group's Auto Scaling group is EKS's and carries none, SPEC K3) and the
alarms, and refuses work that could not end in time."""

from __future__ import annotations

from typing import Any

from ansible_collections.eksops.nodegroup.plugins.module_utils.errors import invalid_parameter
from ansible_collections.eksops.nodegroup.plugins.module_utils.nodegroup import kinds
from ansible_collections.eksops.nodegroup.plugins.module_utils.gates.safe_points import GATE_ARGUMENT_SPEC, SafePoints
from ansible_collections.eksops.nodegroup.plugins.module_utils.host.clock import utc_now_iso
from ansible_collections.eksops.nodegroup.plugins.module_utils.nodegroup.discovery import (
    NODEGROUP_ARGUMENT_SPEC,
    find_module_nodegroup,
)

ARGUMENT_SPEC = dict(
    NODEGROUP_ARGUMENT_SPEC,
    where=dict(type="str", required=True),
    expected_seconds=dict(type="int", default=0),
    check_pause=dict(type="bool", default=True),
    **GATE_ARGUMENT_SPEC
)


def run(module: Any) -> dict[str, Any]:
    """The task result: nothing changed, and the ``gate``'s verdict (the deadline the next work must end by)."""
    params = module.params
    if params["expected_seconds"] < 0:
        raise invalid_parameter("expected_seconds", "expected_seconds must be >= 0, got %d" % params["expected_seconds"])

    def cloudwatch() -> Any:  # a client only when alarm_names is set
        return module.aws("cloudwatch")

    safe_points = SafePoints.from_params(params, cloudwatch)
    asg = None
    if params["check_pause"]:
        group = find_module_nodegroup(module)
        asg = None if group.kind == kinds.MANAGED else group.asg
    deadline = safe_points.check(params["where"], params["expected_seconds"], asg)
    return dict(changed=False, gate=dict(where=params["where"], checked_at=utc_now_iso(),
                                         deadline=utc_now_iso(deadline) if deadline is not None else None,
                                         alarms=list(safe_points.alarm_names)))
