# -*- coding: utf-8 -*-
# Copyright: Contributors to the eksops.nodegroup project
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""How many nodes an upgrade replaces at once and what size the group is on the way: max_unavailable (U1), the
rolling surge (U2) and the parallelism resolved from them (issue 12), the scaled-up sizes, the surge strategy's
settings and steps (S1, S3, S4), and whether the autoscaler changed the desired capacity we set (C3).

Pure: every function takes plain values and returns plain values.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from typing import Any

from ansible_collections.eksops.nodegroup.plugins.module_utils.plan.placement import SURGE_SIZINGS, per_az_surge
from ansible_collections.eksops.nodegroup.plugins.module_utils.errors import invalid_parameter

MAX_UNAVAILABLE_LIMIT = 100
SURGE_CAP_DEFAULT = 20
SURGE_CAP_LIMIT = 100


def _check_int_range(parameter: str, value: Any, low: int, high: int) -> None:
    if isinstance(value, bool) or not isinstance(value, int):
        raise invalid_parameter(parameter, "%s must be an integer, got %r" % (parameter, value), value=value)
    if value < low or value > high:
        raise invalid_parameter(
            parameter, "%s must be between %d and %d, got %d" % (parameter, low, high, value), value=value)


def resolve_max_unavailable(max_unavailable: int | None, max_unavailable_percentage: int | None, node_count: int) -> int:
    """Nodes upgraded in parallel (SPEC U1), with EKS NodegroupUpdateConfig semantics.

    ``max_unavailable`` and ``max_unavailable_percentage`` (each 1..100) are mutually exclusive; neither
    means 1. A percentage is of ``node_count``, the node group's size before the upgrade (never the surged
    group), rounded up: EKS does not document its rounding, and 50 % of 5 nodes is 3 nodes in EKS's updates as
    issue 10 item 4 records them. Never less than one node, never more than 100.
    """
    if max_unavailable is not None and max_unavailable_percentage is not None:
        raise invalid_parameter(
            "max_unavailable",
            "max_unavailable and max_unavailable_percentage are mutually exclusive; set only one",
            value=max_unavailable)
    if max_unavailable_percentage is not None:
        _check_int_range("max_unavailable_percentage", max_unavailable_percentage, 1, 100)
        if node_count < 0:
            raise ValueError("node_count must be >= 0, got %r" % (node_count,))
        # U1: the result is a node count in 1..100 like max_unavailable, whatever the group's size.
        return min(MAX_UNAVAILABLE_LIMIT, max(1, -(-node_count * max_unavailable_percentage // 100)))
    if max_unavailable is None:
        return 1
    _check_int_range("max_unavailable", max_unavailable, 1, MAX_UNAVAILABLE_LIMIT)
    return max_unavailable


def rolling_surge(az_count: int, max_unavailable: int) -> int:
    """New nodes launched before the rolling upgrade (SPEC U2): max(2 x AZs, max_unavailable)."""
    if az_count < 0 or max_unavailable < 0:
        raise ValueError("az_count and max_unavailable must be >= 0")
    return max(2 * az_count, max_unavailable)


def rolling_parallelism(group_size: int, az_count: int, max_unavailable: int | None = None, max_unavailable_percentage: int | None = None,
                        minimal: bool = False, surge: str = "eks", az_counts: Mapping[str, int] | None = None,
                        old_azs: Iterable[str] = ()) -> dict[str, int]:
    """The parallelism of a rolling (or, with ``minimal``, a minimal) upgrade, resolved once (issue 12):
    {max_unavailable, surge, batch_size}.

    ``group_size`` is the group's desired capacity before the upgrade (the journal's while one is under way), the
    base of a percentage, never the surged group (SPEC U1). The scale-up adds ``surge`` nodes (none for minimal,
    U7): with ``surge`` "eks", U2's larger of twice the AZ count and max_unavailable; with "per_az", per_az_surge
    of ``az_counts`` (live instances in each of the group's ``az_count`` AZs) and ``old_azs`` (B2). The old nodes go
    ``batch_size`` at a time (U5), all from the one resolved max_unavailable: asg_surge and the plan cannot disagree.
    """
    if surge not in SURGE_SIZINGS:
        raise invalid_parameter("surge", "surge must be one of %s, got %r" % (", ".join(SURGE_SIZINGS), surge),
                                value=surge)
    max_unavailable = resolve_max_unavailable(max_unavailable, max_unavailable_percentage, group_size)
    size = 0 if minimal else rolling_surge(az_count, max_unavailable)
    if size and surge == "per_az":
        size = per_az_surge(az_counts, old_azs, max_unavailable, cap=size)
    return dict(max_unavailable=max_unavailable, surge=size, batch_size=max_unavailable)


def scaled_up_sizes(min_size: int, max_size: int, target_desired: int) -> dict[str, int]:
    """ASG sizes that run ``target_desired`` instances: MaxSize only grows, MinSize is untouched."""
    return {
        "min_size": min_size,
        "max_size": max(max_size, target_desired),
        "desired_capacity": target_desired,
    }


def validate_surge_settings(max_surge: int, max_unavailable: int, cap: int = SURGE_CAP_DEFAULT) -> None:
    """Check the surge parameters (SPEC S1); raise InvalidParameter naming the offending one."""
    _check_int_range("surge_cap", cap, 1, SURGE_CAP_LIMIT)
    _check_int_range("max_surge", max_surge, 0, cap)
    _check_int_range("max_unavailable", max_unavailable, 0, cap)
    if max_surge == 0 and max_unavailable == 0:
        raise invalid_parameter(
            "max_surge", "max_surge and max_unavailable cannot both be 0: at least one must be > 0",
            value=max_surge)
    if max_surge + max_unavailable > cap:
        raise invalid_parameter(
            "max_surge",
            "max_surge + max_unavailable must not exceed %d (surge_cap), got %d + %d"
            % (cap, max_surge, max_unavailable),
            value=max_surge)


def surge_steps(node_count: int, max_surge: int, max_unavailable: int) -> list[dict[str, int]]:
    """The GKE-style surge schedule (SPEC S3, S4) for a group of ``node_count`` old nodes.

    Each step first raises the desired capacity to ``desired_after_launch`` (launching ``launch`` new
    nodes and waiting for them to be Ready), then drains and terminates ``replace`` old nodes with
    decrement, ending at ``desired_after_terminate``. The group size stays in
    ``[node_count - max_unavailable, node_count + max_surge]``, at most ``max_surge + max_unavailable``
    old nodes are replaced at once, and at least ``node_count - max_unavailable`` nodes stay available.
    ``max_surge == 0`` terminates before it creates. The last step ends at ``node_count`` new nodes.
    """
    if node_count < 0:
        raise ValueError("node_count must be >= 0")
    if max_surge < 0 or max_unavailable < 0 or max_surge + max_unavailable == 0:
        raise ValueError("need max_surge >= 0, max_unavailable >= 0, and one of them > 0")
    upper = node_count + max_surge
    lower = max(0, node_count - max_unavailable)
    steps = []
    count, old_left, launched = node_count, node_count, 0
    while old_left > 0 or launched < node_count:
        launch = min(upper - count, node_count - launched)
        count += launch
        launched += launch
        # count - lower never binds by construction; it states the S4 floor the loop must respect.
        replace = min(max_surge + max_unavailable, old_left, count - lower)
        steps.append({
            "step": len(steps) + 1,
            "launch": launch,
            "desired_after_launch": count,
            "replace": replace,
            "desired_after_terminate": count - replace,
        })
        count -= replace
        old_left -= replace
    return steps


def place_surge_steps(steps: Iterable[Mapping[str, int]], old_ids: Sequence[str], group_size: int) -> list[dict[str, Any]]:
    """The surge ``steps`` (``surge_steps`` of the ``old_ids``) on the group as it is, for the surge role to pass on
    without arithmetic (issue 12).

    ``group_size`` is the group's size before the upgrade; nodes that are not old (replaced by a crashed run) stay,
    so each step's ``desired_capacity`` is its ``desired_after_launch`` plus ``group_size`` minus the old nodes.
    Its ``instance_ids`` are the next ``replace`` of ``old_ids``, in their order (the batches').
    """
    base = group_size - len(old_ids)
    placed, done = [], 0
    for step in steps:
        placed.append(dict(step, desired_capacity=base + step["desired_after_launch"],
                           instance_ids=old_ids[done:done + step["replace"]]))
        done += step["replace"]
    return placed


def autoscaler_changed(desired_now: int | str, desired_set: int | str | None, desired_pending: int | str | None = None) -> bool:
    """True when someone else (the cluster autoscaler) changed the desired capacity we set (SPEC C3).

    ``desired_pending``: the desired capacity our own decrementing terminations under way leave; a crash among them
    or before the journal's update leaves the group from there to ``desired_set``, which is not the autoscaler.
    """
    low = desired_set if desired_pending is None else desired_pending
    return desired_set is not None and not int(low) <= int(desired_now) <= int(desired_set)
