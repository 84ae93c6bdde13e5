# -*- coding: utf-8 -*-
# Copyright: Contributors to the eksops.nodegroup project
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""The one rule for a drain option that is checked before any change by more than the drain engine (issue 26 item
6): the engine's DrainOptions applies it, and the nodegroup_upgrade role asks it through the filter
drain_timeout_problem before its first AWS call. Pure and light: the filter loads it in the controller's template
engine, where the drain engine's imports (the kubernetes client) would cost 0.6 s of every run."""

from __future__ import annotations

from ansible_collections.eksops.nodegroup.plugins.module_utils.errors import invalid_parameter


def check_drain_timeout(seconds: int) -> None:
    """Refuse a drain_timeout below 1 second, naming it."""
    if seconds < 1:
        raise invalid_parameter("drain_timeout", "drain_timeout must be at least 1 second, got %d" % seconds)
