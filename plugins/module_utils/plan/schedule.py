# -*- coding: utf-8 -*-
# Copyright: Contributors to the eksops.nodegroup project
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""The order in which old instances leave the group, so that each pod moves once (SPEC B1, issue 11 item 1).

EKS's schedule (``eks``): after the scale-up the group holds N old and S new instances; every old instance is
terminated without decrementing the desired capacity, so Auto Scaling launches a replacement, and the scale-down
then drains S surplus nodes that by then host pods evicted from old nodes: those pods move twice.

Schedule ``once``: right after the scale-up, the new instances an AZ will not need at the end (beyond its count
before the upgrade) are chosen as surplus (``choose_surplus``), to be cordoned before any drain so no evicted pod
lands there, and removed empty at scale-down. The last terminations decrement the desired capacity (no
replacement), so the group ends with its start count in every AZ, all new. Decrements come last because each one
takes a node of the surge away while pods still have to move; one comes earlier only where it is what makes a
needed replacement land in the right AZ.

Where a replacement goes: "Auto Scaling uses the Availability Zone with the least number of instances when
launching new instances" (Auto Scaling developer guide, "Auto Scaling behavior",
http://docs.amazonwebservices.com/AutoScaling/latest/DeveloperGuide/AutoScalingBehavior.html); today's user guide
says the group "maintains an equal number of instances across enabled Availability Zones" ("Auto Scaling group
Availability Zone distribution",
https://docs.aws.amazon.com/autoscaling/ec2/userguide/ec2-auto-scaling-availability-zone-balanced.html, strategies
balanced-best-effort and balanced-only). Live instances (Pending, InService) count, terminating ones do not;
AZRebalance is suspended during the upgrade (A1); a decrementing termination launches nothing. Auto Scaling
documents no order among AZs with equally few instances, so a replacement is SAFE only when every AZ it may go to
still needs a new node: nothing here relies on a tie-break. A launch that fails in its AZ and goes to another
(balanced-best-effort) is not predicted: the next batch plans from the group as it then is.

When no replacement can be proven safe and no decrement is left, a batch is ``at_risk``. The property tests
(tests/unit/plugins/module_utils/test_schedule.py) find that on groups whose AZs start unbalanced (more than one
instance between the fullest and the emptiest: Auto Scaling pulls replacements towards the emptiest), and on
balanced groups surged by fewer nodes than they have AZs (an AZ without a surge node may have to get its last new
node from another AZ's old node while tied with it); never on a balanced group surged by either sizing of SPEC
U2/B2 or by at least one node per AZ. Pure functions; the modules read the group and do the terminations.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable, Iterator, Mapping, Sequence
from itertools import combinations
from typing import Any
import random

SCHEDULES = ("once", "eks")


class GroupView:
    """What the schedule reads of the group now, per AZ (pure data).

    ``zones``: the AZs the group launches into, in order. ``start``: instances per AZ before the scale-up (the end
    state must equal it in every AZ of ``zones``). ``old``: ids of old instances per AZ not yet terminating.
    ``kept_new``: live new instances per AZ that are not surplus. ``live``: every live (Pending, InService)
    instance per AZ, surplus included. ``owed``: launches Auto Scaling still owes (its desired capacity minus the
    live instances), placed by the AZ rule before the next batch's terminations.
    """

    def __init__(self, zones: Sequence[str], start: Mapping[str, int], old: Mapping[str, Sequence[str]],
                 kept_new: Mapping[str, int], live: Mapping[str, int], owed: int = 0) -> None:
        if not zones:
            raise ValueError("the group launches into no AZ")
        if owed < 0:
            raise ValueError("owed launches must be >= 0, got %d" % owed)
        self.zones = tuple(zones)
        self.start = {az: start.get(az, 0) for az in self.zones}
        self.old = {az: sorted(ids) for az, ids in old.items() if ids}
        self.kept_new = {az: kept_new.get(az, 0) for az in self.zones}
        self.live = {az: live.get(az, 0) for az in self.zones}
        self.owed = owed


class ScheduledBatch:
    """Old instances terminated together; ``decrement_ids`` are terminated with ShouldDecrementDesiredCapacity
    true, the others are replaced. ``at_risk``: a replacement of this batch could not be proven to land in an AZ
    that needs one (per-AZ end counts may then differ from the start)."""

    def __init__(self, instance_ids: list[str], decrement_ids: list[str], at_risk: bool = False) -> None:
        self.instance_ids = instance_ids
        self.decrement_ids = decrement_ids
        self.at_risk = at_risk

    def as_dict(self) -> dict[str, Any]:
        return dict(instance_ids=self.instance_ids, decrement_ids=self.decrement_ids, at_risk=self.at_risk)

    def __eq__(self, other: object) -> bool:
        return isinstance(other, ScheduledBatch) and self.as_dict() == other.as_dict()

    def __repr__(self) -> str:
        return "ScheduledBatch(%r, %r, at_risk=%r)" % (self.instance_ids, self.decrement_ids, self.at_risk)


def _fill(zones: Sequence[str], live: Mapping[str, int], launches: int) -> tuple[dict[str, int], list[str], int]:
    """Where ``launches`` launches go by the AZ rule from ``live`` instances per AZ, as (sure, tied, spare):
    ``sure[az]`` of them go to ``az`` however ties are broken; the ``spare`` others (fewer than ``len(tied)``) go
    one each to ``spare`` AZs of ``tied`` (the AZs then holding equally few), which ones Auto Scaling does not say.
    """
    counts = {az: live[az] for az in zones}
    tied: list[str] = []
    spare = launches
    while spare:
        fewest = min(counts.values())
        tied = [az for az in zones if counts[az] == fewest]
        if spare < len(tied):
            break
        for az in tied:
            counts[az] += 1
        spare -= len(tied)
    return {az: counts[az] - live[az] for az in zones}, (tied if spare else []), spare


def _outcomes(view: GroupView) -> Iterator[tuple[dict[str, int], dict[str, int]]]:
    """Each (kept_new, live) the group may hold once Auto Scaling has launched what it owes."""
    sure, tied, spare = _fill(view.zones, view.live, view.owed)
    for extra in combinations(tied, spare):
        kept = {az: view.kept_new[az] + sure[az] + (az in extra) for az in view.zones}
        live = {az: view.live[az] + sure[az] + (az in extra) for az in view.zones}
        yield kept, live


class _Batch:
    """A batch being chosen: counts of replaced and decremented old instances per AZ, checked for safety against
    every state the group may be in."""

    def __init__(self, view: GroupView, rng: random.Random) -> None:
        self.zones = view.zones
        self.rng = rng
        self.states = [({az: max(0, view.start[az] - kept[az]) for az in view.zones}, live)
                       for kept, live in _outcomes(view)]
        self.left = {az: list(ids) for az, ids in view.old.items()}
        self.replaced: Counter[str] = Counter()
        self.decremented: Counter[str] = Counter()
        self.ids: list[str] = []
        self.decrement_ids: list[str] = []

    def safe(self, replaced: Mapping[str, int], decremented: Mapping[str, int]) -> bool:
        """Whether, in every state, each replacement lands where a new node is still needed, however ties go."""
        for need, live in self.states:
            after = {az: live[az] - replaced.get(az, 0) - decremented.get(az, 0) for az in self.zones}
            sure, tied, spare = _fill(self.zones, after, sum(replaced.values()))
            if any(sure[az] + (az in tied) > need[az] for az in self.zones):
                return False
        return True

    def candidates(self, replace: int, decrement: int) -> list[tuple[str, str]]:
        """The (replaced AZ, decremented AZ) pairs of old instances still left, ``replace`` and ``decrement`` (0
        or 1) of each, that keep the batch safe; an AZ is "" where its count is 0."""
        pairs = []
        for rep in (list(self.left) if replace else [""]):
            for dec in (list(self.left) if decrement else [""]):
                replaced = self.replaced + Counter({rep: replace})
                decremented = self.decremented + Counter({dec: decrement})
                if len(self.left.get(rep, ())) < replace + (rep == dec) * decrement:
                    continue
                if self.safe(replaced, decremented):
                    pairs.append((rep, dec))
        return pairs

    def add(self, az: str, decrement: bool) -> None:
        """Add an old instance of ``az``, drawn at random."""
        instance_id = self.left[az].pop(self.rng.randrange(len(self.left[az])))
        if not self.left[az]:
            del self.left[az]
        self.ids.append(instance_id)
        if decrement:
            self.decremented[az] += 1
            self.decrement_ids.append(instance_id)
        else:
            self.replaced[az] += 1

    def add_one(self, pairs: Sequence[tuple[str, str]]) -> None:
        """Add one of ``pairs`` at random, each weighed by the combinations of old instances it may draw."""
        weights = [(len(self.left[rep]) if rep else 1) * (len(self.left[dec]) - (rep == dec) if dec else 1)
                   for rep, dec in pairs]
        rep, dec = self.rng.choices(pairs, weights)[0]
        if dec:
            self.add(dec, True)
        if rep:
            self.add(rep, False)


def next_batch(view: GroupView, batch_size: int, rng: random.Random) -> ScheduledBatch | None:
    """The next batch of up to ``batch_size`` old instances (SPEC U5, B1), drawn with ``rng`` within these rules;
    None when no old instance is left.

    Replacements (no decrement) come first, each only where it is safe (module docstring). Decrements: exactly
    ``old - needed`` of them in all, ``needed`` being the new nodes the AZs still lack to reach their start
    counts; they fill batches once every needed replacement is chosen, or come earlier, paired with a replacement
    they make safe when no replacement is safe alone (the decrement alone when ``batch_size`` is 1: the
    replacement follows in the next batch), or alone when not even that helps (a decrement risks nothing).
    When no replacement can be made safe and no decrement is left, the batch is replacements ``at_risk``.
    """
    if batch_size < 1:
        raise ValueError("batch_size must be >= 1, got %d" % batch_size)
    left = sum(len(ids) for ids in view.old.values())
    if not left:
        return None
    batch = _Batch(view, rng)
    decrements = max(0, min(left - sum(need.values()) for need, _live in batch.states))
    replacements = left - decrements
    while len(batch.ids) < batch_size:
        if sum(batch.replaced.values()) < replacements:
            pairs = batch.candidates(1, 0)
            if not pairs and not batch.ids and decrements:
                pairs = batch.candidates(1, 1)
                if batch_size == 1:
                    pairs = sorted(set(("", dec) for _rep, dec in pairs))
                pairs = pairs or batch.candidates(0, 1)
        elif sum(batch.decremented.values()) < decrements:
            pairs = batch.candidates(0, 1)
        else:
            pairs = []
        if not pairs:
            break
        batch.add_one(pairs)
    if batch.ids:
        return ScheduledBatch(batch.ids, batch.decrement_ids)
    while len(batch.ids) < min(batch_size, left):
        batch.add_one([(az, "") for az in batch.left])
    return ScheduledBatch(batch.ids, [], at_risk=True)


def choose_surplus(start: Mapping[str, int], new_by_az: Mapping[str, Sequence[str]],
                   preexisting: Iterable[str] = ()) -> list[str]:
    """The new instances no AZ needs at the end, chosen right after the scale-up (SPEC B1): in each AZ, those
    beyond ``start[az]``, never a ``preexisting`` one (new before this scale-up, e.g. from an interrupted run: it
    may host pods). Among the others the highest instance ids are chosen, so the choice depends on the ids only."""
    keep = set(preexisting)
    surplus = []
    for az in sorted(new_by_az):
        ids = new_by_az[az]
        candidates = sorted(i for i in ids if i not in keep)
        count = min(len(candidates), max(0, len(ids) - start.get(az, 0)))
        surplus.extend(candidates[len(candidates) - count:])
    return surplus


def plan_schedule(zones: Sequence[str], start: Mapping[str, int], old_by_az: Mapping[str, Sequence[str]],
                  new_by_az: Mapping[str, int], batch_size: int, seed: int,
                  preexisting_new: Mapping[str, int] | None = None) -> dict[str, Any]:
    """The whole schedule ``once`` predicted before the scale-up (a dry run's plan): ``new_by_az``, the new
    instances per AZ expected after the surge (``preexisting_new`` of them there before it), gives the surplus;
    batches come from ``next_batch`` with ``random.Random(seed)``, each replacement placed by the AZ rule, in the
    group's AZ order where Auto Scaling's choice is not determined (the real run chooses from the group as it is).
    Returns batches (as dicts), surplus (per AZ), decrements, end_per_az (new instances per AZ kept at the end)
    and at_risk_batches (1-based)."""
    zones = list(zones)
    preexisting_new = preexisting_new or {}
    surplus = {az: min(new - preexisting_new.get(az, 0), max(0, new - start.get(az, 0)))
               for az, new in new_by_az.items()}
    old = {az: list(ids) for az, ids in old_by_az.items()}
    kept = {az: new_by_az.get(az, 0) - surplus.get(az, 0) for az in zones}
    live = {az: len(old.get(az, ())) + new_by_az.get(az, 0) for az in zones}
    rng = random.Random(seed)
    batches: list[ScheduledBatch] = []
    owed = 0
    while True:
        batch = next_batch(GroupView(zones, start, old, kept, live, owed), batch_size, rng)
        sure, tied, spare = _fill(zones, live, owed)
        for az in zones:
            launched = sure[az] + (az in tied[:spare])
            kept[az] += launched
            live[az] += launched
        if batch is None:
            break
        batches.append(batch)
        for az, ids in old.items():
            gone = [i for i in ids if i in batch.instance_ids]
            old[az] = [i for i in ids if i not in gone]
            if az in live:
                live[az] -= len(gone)
        owed = len(batch.instance_ids) - len(batch.decrement_ids)
    return dict(batches=[batch.as_dict() for batch in batches], surplus=surplus,
                decrements=sum(len(batch.decrement_ids) for batch in batches), end_per_az=kept,
                at_risk_batches=[number for number, batch in enumerate(batches, 1) if batch.at_risk])
