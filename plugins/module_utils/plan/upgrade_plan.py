# -*- coding: utf-8 -*-
# Copyright: Contributors to the eksops.nodegroup project
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""The upgrade plan: strategy, parallelism, surge and the random batches (SPEC U2, U5, U7, S1-S4)."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any
import random

from ansible_collections.eksops.nodegroup.plugins.module_utils.plan import schedule as schedules
from ansible_collections.eksops.nodegroup.plugins.module_utils.plan.placement import balanced_launches
from ansible_collections.eksops.nodegroup.plugins.module_utils.errors import invalid_parameter
from ansible_collections.eksops.nodegroup.plugins.module_utils.plan.instance_choice import pick_batch
from ansible_collections.eksops.nodegroup.plugins.module_utils.plan.parallelism import (
    SURGE_CAP_DEFAULT,
    place_surge_steps,
    resolve_max_unavailable,
    rolling_parallelism,
    surge_steps,
    validate_surge_settings,
)


def random_batches(old: Sequence[dict[str, Any]], batch_size: int, rng: random.Random) -> list[list[str]]:
    """All old instances split into batches of instance ids, each drawn with instance_choice.pick_batch (SPEC U5)."""
    batches = []
    remaining = list(old)
    while remaining:
        batch = pick_batch(remaining, batch_size, rng)
        if not batch:
            raise ValueError("batch_size must be > 0 while old instances remain")
        chosen = set(instance["instance_id"] for instance in batch)
        batches.append([instance["instance_id"] for instance in batch])
        remaining = [instance for instance in remaining if instance["instance_id"] not in chosen]
    return batches


def schedule_plan(schedule: str, strategy: str, zones: Sequence[str], old: Sequence[Mapping[str, Any]],
                  new: Sequence[Mapping[str, Any]], surge: int, batch_size: int, seed: int,
                  start_per_az: Mapping[str, int] | None = None, surged: bool = False) -> dict[str, Any]:
    """The schedule of the terminations (issue 11 item 1, SPEC B1) for a plan a person reads (a dry run).

    ``once`` (rolling strategy only; the others run EKS's) is schedule.plan_schedule from the instances per AZ
    before the scale-up (``start_per_az``, the journal's, else the live ones now), the old instances per AZ, and the
    new ones per AZ once the surge is there: the ones there now plus, when the group is not ``surged`` yet, the
    surge where Auto Scaling's balanced placement is expected to put it (placement.balanced_launches). Returns
    {schedule} for eks, with plan_schedule's batches, surplus, decrements, end_per_az and at_risk_batches for once.
    """
    if schedule != "once" or strategy != "rolling":
        return dict(schedule="eks")
    old_by_az = dict((zone, []) for zone in zones)
    for instance in old:
        old_by_az.setdefault(instance.get("availability_zone") or "", []).append(instance["instance_id"])
    new_now = dict.fromkeys(zones, 0)
    for instance in new:
        zone = instance.get("availability_zone") or ""
        new_now[zone] = new_now.get(zone, 0) + 1
    live_now = dict((zone, len(old_by_az.get(zone, [])) + new_now.get(zone, 0)) for zone in zones)
    start = dict(start_per_az) if start_per_az is not None else live_now
    new_by_az = dict(new_now)
    if not surged:
        for zone, count in balanced_launches(live_now, surge).items():
            new_by_az[zone] = new_by_az.get(zone, 0) + count
    planned = schedules.plan_schedule(list(zones), start, old_by_az, new_by_az, batch_size, seed,
                                      preexisting_new=new_now if not surged else None)
    return dict(planned, schedule="once", start_per_az=start)


def upgrade_plan(old: Sequence[dict[str, Any]], node_count: int, az_count: int, update_strategy: str = "default",
                 max_unavailable: int | None = None, max_unavailable_percentage: int | None = None, max_surge: int | None = None,
                 surge_cap: int = SURGE_CAP_DEFAULT, seed: int | None = None, group_size: int | None = None,
                 surge_sizing: str = "eks", az_counts: Mapping[str, int] | None = None,
                 recorded_surge: int | None = None) -> dict[str, Any]:
    """The upgrade plan for the given parameters: strategy, parallelism, surge and the random batches.

    ``max_surge`` given selects the surge strategy (SPEC S1-S4, max_unavailable may then be 0); otherwise
    ``update_strategy`` default (U2: pre-scale by max(2 x AZs, max_unavailable)) or minimal (U7: no pre-scale).
    A percentage is of ``group_size``, the group's size before the upgrade (``node_count``, the nodes there are
    now, when not given), so a resumed run, with the group surged, keeps the same parallelism (issue 10 item 4).
    ``seed`` makes the batches reproducible; without one a seed is drawn and reported. ``surge_sizing`` per_az
    sizes the rolling scale-up from ``az_counts`` (live instances per AZ of the group) and the AZs of ``old`` (SPEC
    B2), or takes ``recorded_surge``, the journal's, as asg_surge does on a rerun.
    """
    size = node_count if group_size is None else group_size
    if max_surge is not None:
        if update_strategy == "minimal":
            raise invalid_parameter("max_surge", "max_surge selects the surge strategy; it cannot be combined "
                                    "with update_strategy=minimal")
        if max_unavailable is None and max_unavailable_percentage is not None:
            max_unavailable = resolve_max_unavailable(None, max_unavailable_percentage, size)
        max_unavailable = max_unavailable or 0
        validate_surge_settings(max_surge, max_unavailable, surge_cap)
        strategy, surge, batch_size = "surge", max_surge, max_surge + max_unavailable
    else:
        strategy = "minimal" if update_strategy == "minimal" else "rolling"
        resolved = rolling_parallelism(size, az_count, max_unavailable, max_unavailable_percentage,
                                       minimal=strategy == "minimal", surge=surge_sizing, az_counts=az_counts,
                                       old_azs=[instance.get("availability_zone") for instance in old])
        max_unavailable, surge, batch_size = resolved["max_unavailable"], resolved["surge"], resolved["batch_size"]
        if surge_sizing == "per_az" and recorded_surge is not None and strategy == "rolling":
            surge = recorded_surge
    if seed is None:
        seed = random.SystemRandom().randrange(2 ** 31)
    batches = random_batches(old, batch_size, random.Random(seed))
    steps = size_range = None
    if strategy == "surge":
        queue = [instance_id for batch in batches for instance_id in batch]
        steps = place_surge_steps(surge_steps(len(old), max_surge, max_unavailable), queue, size)
        # SPEC S4: the group's size stays in this range.
        size_range = [max(0, size - max_unavailable), size + max_surge]
    return dict(
        strategy=strategy,
        node_count=node_count,
        group_size=size,
        # The desired capacity while the old nodes are replaced (rolling and minimal: the scale-up's; surge: the
        # highest step's), for a person to read (a dry run, issue 10 item 9).
        desired_capacity_during=size + surge,
        old_count=len(old),
        max_unavailable=max_unavailable,
        max_surge=max_surge,
        surge=surge,
        surge_sizing=surge_sizing if strategy == "rolling" else None,
        batch_size=batch_size,
        seed=seed,
        batches=batches,
        steps=steps,
        size_range=size_range,
    )
