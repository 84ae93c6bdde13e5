# -*- coding: utf-8 -*-
# Copyright: Contributors to the eksops.nodegroup project
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Which Auto Scaling processes an upgrade suspends (A1) and which it may: pure."""

from __future__ import annotations

from collections.abc import Iterable

from ansible_collections.eksops.nodegroup.plugins.module_utils.errors import invalid_parameter


def plan_suspension(recorded: Iterable[str], requested: Iterable[str], suspended_now: Iterable[str]) -> tuple[list[str], list[str]]:
    """SPEC A1: (processes the upgrade owns, processes to suspend now).

    ``recorded``: the processes the journal says the upgrade suspended; ``requested``: the ones it wants
    suspended; ``suspended_now``: the ones suspended on the group. A requested process already suspended by
    someone else is not ours (restore must leave it suspended); a recorded one that is not suspended (a crash
    between the journal write and the suspension) is suspended again.
    """
    ours = list(recorded)
    ours.extend(process for process in requested if process not in suspended_now and process not in ours)
    return ours, [process for process in ours if process not in suspended_now]


# Auto Scaling processes an upgrade may suspend: Launch and Terminate are needed to replace the nodes.
SUSPENDABLE_PROCESSES = ("AddToLoadBalancer", "AlarmNotification", "AZRebalance", "HealthCheck", "InstanceRefresh",
                         "ReplaceUnhealthy", "ScheduledActions")


def validate_suspend_processes(processes: Iterable[str], parameter: str = "suspend_processes") -> None:
    """Refuse processes an upgrade cannot suspend, naming the parameter."""
    unknown = [process for process in processes if process not in SUSPENDABLE_PROCESSES]
    if unknown:
        raise invalid_parameter(
            parameter, "%s: %s cannot be suspended during an upgrade; choose from %s"
            % (parameter, ", ".join(unknown), ", ".join(SUSPENDABLE_PROCESSES)), value=unknown)
