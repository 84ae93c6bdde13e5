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
