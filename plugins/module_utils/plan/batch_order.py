# -*- coding: utf-8 -*-
# Copyright: Contributors to the eksops.nodegroup project
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""The order of the rolling strategies' batches (issue 27 items 1 and 7). Pure: the plan's batches and the zone of
each old instance in, batches out; the plan's random draw (SPEC U5) stays the choice within each zone.

- The canary (item 1): one old node per Availability Zone first, then a soak and the health gate, then the rest
  (GKE's and AKS's canary node before a pool's upgrade; one per zone here so that a bad AMI or zone shows before
  most nodes go). The canary nodes are the plan's first node in each zone, in the plan's order; they go in batches of
  at most ``batch_size`` (max_unavailable is never exceeded: with fewer nodes per batch than zones the canary is
  several batches, and its soak follows the last of them). The rest keep the plan's batches and order, less the
  canary nodes.
- One zone at a time (item 7, ``batch_order: zone``): the old nodes of one zone after the other, zones in name
  order, each zone's in the plan's order, in batches of at most ``batch_size`` that never mix zones, so that a bad
  AMI hurts one zone before the health gate at the end of each zone stops the run.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence


def _zone(zone_of: Mapping[str, str | None], instance_id: str) -> str:
    """An instance's zone; one of unknown zone counts as a zone of its own."""
    return zone_of.get(instance_id) or "unknown zone of %s" % instance_id


def _chunks(ids: Sequence[str], batch_size: int) -> list[list[str]]:
    if batch_size < 1:
        raise ValueError("batch_size must be >= 1, got %d" % batch_size)
    return [list(ids[k:k + batch_size]) for k in range(0, len(ids), batch_size)]


def canary_batches(batches: Sequence[Sequence[str]], zone_of: Mapping[str, str | None],
                   batch_size: int) -> tuple[list[list[str]], list[list[str]]]:
    """(the canary batches, the plan's other batches) for the plan's ``batches``; ``zone_of`` instance id -> its
    Availability Zone."""
    canary, zones = [], set()
    for instance_id in (i for batch in batches for i in batch):
        zone = _zone(zone_of, instance_id)
        if zone not in zones:
            zones.add(zone)
            canary.append(instance_id)
    chosen = set(canary)
    rest = [[i for i in batch if i not in chosen] for batch in batches]
    return _chunks(canary, batch_size), [batch for batch in rest if batch]


def zone_batches(batches: Sequence[Sequence[str]], zone_of: Mapping[str, str | None],
                 batch_size: int) -> list[list[list[str]]]:
    """The plan's ``batches`` one zone after the other: per zone (in name order), its batches."""
    by_zone = {}
    for instance_id in (i for batch in batches for i in batch):
        by_zone.setdefault(_zone(zone_of, instance_id), []).append(instance_id)
    return [_chunks(by_zone[zone], batch_size) for zone in sorted(by_zone)]
