# -*- coding: utf-8 -*-
# Copyright: Contributors to the eksops.nodegroup project
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""The canary of the rolling strategies (issue 27 item 1): one old node per Availability Zone first, then a soak and
the health gate, then the rest (GKE's and AKS's canary node before a pool's upgrade, one per zone here so that a bad
AMI or zone shows before most nodes go).

Pure: the plan's batches and the zone of each old instance in, the canary batches and the rest out. The canary
nodes are the plan's first node in each zone, in the plan's order (its random draw, SPEC U5, stays the choice);
they go in batches of at most ``batch_size`` (max_unavailable is never exceeded: with fewer nodes per batch than
zones the canary is several batches, and its soak follows the last of them). The rest keep the plan's batches and
order, less the canary nodes.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence


def canary_batches(batches: Sequence[Sequence[str]], zone_of: Mapping[str, str | None],
                   batch_size: int) -> tuple[list[list[str]], list[list[str]]]:
    """(the canary batches, the plan's other batches) for the plan's ``batches``; ``zone_of`` instance id -> its
    Availability Zone (an instance of unknown zone counts as a zone of its own)."""
    if batch_size < 1:
        raise ValueError("batch_size must be >= 1, got %d" % batch_size)
    canary, zones = [], set()
    for instance_id in (i for batch in batches for i in batch):
        zone = zone_of.get(instance_id) or "unknown zone of %s" % instance_id
        if zone not in zones:
            zones.add(zone)
            canary.append(instance_id)
    chosen = set(canary)
    rest = [[i for i in batch if i not in chosen] for batch in batches]
    return ([canary[k:k + batch_size] for k in range(0, len(canary), batch_size)],
            [batch for batch in rest if batch])
