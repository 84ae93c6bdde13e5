# -*- coding: utf-8 -*-
# Copyright: Contributors to the eksops.nodegroup project
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Where Auto Scaling puts the instances it launches, and the surge sized to need (SPEC B2, U3).

Auto Scaling puts each launch in the enabled AZ with the fewest instances (Auto Scaling user guide, "Availability
Zone distribution") and documents no order among AZs with equally few; no launch can be sent to a chosen AZ. Pure
functions of the group's live instances per AZ; planning.rolling_parallelism resolves the surge with them.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

# How the rolling scale-up is sized (SPEC U2, B2): EKS's max(2 x AZs, max_unavailable), or to need.
SURGE_SIZINGS = ("eks", "per_az")


def live_per_az(availability_zones: Iterable[str], live: Iterable[Mapping[str, Any]]) -> dict[str, int]:
    """The ``live`` instance records (old and new, none leaving) in each AZ the group launches into, empty ones at 0;
    instances in an AZ the group no longer launches into do not count (Auto Scaling balances its enabled AZs)."""
    counts = dict.fromkeys(availability_zones, 0)
    for instance in live:
        if instance["availability_zone"] in counts:
            counts[instance["availability_zone"]] += 1
    return counts


def launches_to_reach(az_counts: Mapping[str, int], azs: Iterable[str]) -> int | None:
    """Fewest launches after which each AZ of ``azs`` has received one, however Auto Scaling breaks ties.

    ``az_counts``: the live instances in each AZ the group launches into (all of them, empty ones at 0). An AZ
    holding ``level - 1`` instances is sure to get a launch only once every AZ with fewer than ``level`` instances
    has been raised to ``level``: until then a tie may go elsewhere. So the answer raises every AZ below
    ``level`` = (the most instances in an AZ of ``azs``) + 1 to ``level``. None when an AZ of ``azs`` is not one
    the group launches into (no launch can reach it); 0 when ``azs`` is empty.
    """
    wanted = set(azs)
    if not wanted:
        return 0
    if not wanted <= set(az_counts):
        return None
    level = max(az_counts[az] for az in wanted) + 1
    return sum(level - count for count in az_counts.values() if count < level)


def per_az_surge(az_counts: Mapping[str, int] | None, old_azs: Iterable[str], max_unavailable: int, cap: int) -> int:
    """The surge sized to need (SPEC B2): enough launches that, under Auto Scaling's balanced placement from the
    group's instances per AZ now, every AZ holding old nodes gets a new node (U3 before the first drain), and at
    least ``max_unavailable`` (Auto Scaling spreads them over the AZs); never more than ``cap``, EKS's
    max(2 x AZs, max_unavailable) (U2).

    EKS's count reaches every AZ of a balanced group (at most one instance between its fullest and emptiest AZ)
    whatever the ties: at most 2 x AZs - 1 launches are needed. Only a group that much out of balance needs more,
    and then EKS's count cannot reach every AZ either: per_az launches EKS's count, and U3's check names the AZ.
    """
    if az_counts is None:
        raise ValueError("the surge per_az needs the group's live instances in each of its AZs")
    needed = launches_to_reach(az_counts, old_azs)
    return cap if needed is None else min(cap, max(needed, max_unavailable))


def balanced_launches(az_counts: Mapping[str, int], launches: int) -> dict[str, int]:
    """Where ``launches`` new instances are expected, one at a time into the AZ with the fewest instances
    (``az_counts``, in the group's AZ order), ties to the first AZ in that order: one answer among those Auto
    Scaling may give, for a plan a person reads (a dry run), not a promise."""
    counts = dict(az_counts)
    placed = dict.fromkeys(counts, 0)
    for _launch in range(max(0, launches) if counts else 0):
        az = min(counts, key=lambda name: counts[name])
        counts[az] += 1
        placed[az] += 1
    return placed


def balanced_end(size: int, az_counts: Mapping[str, int]) -> dict[str, int]:
    """The instances per AZ a group of ``size`` holds balanced, as Auto Scaling keeps it: the same number in each AZ
    of ``az_counts`` (in the group's AZ order), one more in as many as the remainder asks, those holding the most
    now first, ties to the first in that order."""
    zones = list(az_counts)
    each, extra = divmod(size, len(zones)) if zones else (0, 0)
    fullest = sorted(zones, key=lambda zone: (-az_counts[zone], zones.index(zone)))[:extra]
    return dict((zone, each + (zone in fullest)) for zone in zones)


def sure_launches(az_counts: Mapping[str, int], old_per_az: Mapping[str, int], end_per_az: Mapping[str, int]) -> int:
    """How many launches are sure to land in an AZ that still wants a new instance, however Auto Scaling breaks
    ties: an AZ wants one until its new instances reach ``end_per_az``, that is until its instances (``az_counts``,
    old ones included) reach its end count plus its ``old_per_az``. Each launch goes to the AZ with the fewest, so
    every launch below the lowest such level is sure; at that level a tie may go to an AZ that wants none."""
    level = min(end_per_az[zone] + old_per_az.get(zone, 0) for zone in az_counts)
    return sum(max(0, level - count) for count in az_counts.values())


def surge_step_old(az_counts: Mapping[str, int], old: Iterable[Mapping[str, Any]], count: int, end_size: int,
                   next_launch: int) -> list[str]:
    """The ``count`` old instances a surge step replaces, chosen once its launch is placed (SPEC S3; issue 26 item
    2): new instances are never removed, so the group ends with the AZ counts it began with only if every launch
    lands in an AZ that still wants one (Auto Scaling puts each in the AZ with the fewest instances).

    ``az_counts``: the group's live instances per AZ after the step's launch (old and new, none leaving); ``old``:
    the old instance records left to replace (instance_id, availability_zone), in the plan's order; ``end_size``:
    the group's size at the end, spread as balanced_end; ``next_launch``: the next step's launches. One at a time,
    from the AZ whose removal leaves the most sure_launches for the next step (up to ``next_launch``), then the AZ
    holding the most instances (the group stays balanced), the most old ones, the first in the group's order; within
    an AZ in the order of ``old``. Old instances outside the group's AZs (an AZ it no longer launches into, or gone
    from the group) go first. No choice is sure for every way Auto Scaling may break its ties: this one is the best
    a step can see ahead.
    """
    counts = dict(az_counts)
    end = balanced_end(end_size, counts)
    left = {}
    for instance in old:
        left.setdefault(instance["availability_zone"], []).append(instance["instance_id"])
    chosen = [i for zone in list(left) if zone not in counts for i in left.pop(zone)][:count]
    zones = list(counts)

    def preference(zone: str) -> tuple[int, int, int, int]:
        after = dict(counts, **{zone: counts[zone] - 1})
        old_after = dict((name, len(ids) - (name == zone)) for name, ids in left.items())
        return (min(next_launch, sure_launches(after, old_after, end)), counts[zone], len(left[zone]),
                -zones.index(zone))

    while len(chosen) < count and any(left.values()):
        zone = max((name for name in zones if left.get(name)), key=preference)
        chosen.append(left[zone].pop(0))
        counts[zone] -= 1
    return chosen
