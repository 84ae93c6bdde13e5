# -*- coding: utf-8 -*-
# Copyright: Contributors to the eksops.nodegroup project
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""The upgrade journal: what an upgrade changed, recorded on the ASG as tags before the change is made.

Seven tags (TAG_GROUPS), so that it fits Auto Scaling's 50 tags beside the owner's (SPEC W3) and a person can still
read it in the console: ``eksops.nodegroup/run``, ``/sizes`` and ``/target`` hold ``field=value`` pairs joined by
``;``; ``/suspended_processes``, ``/start_per_az``, ``/sizes_set`` and ``/health_gate`` (only while a failed health
gate is not judged again) one field each. A journal an earlier release
wrote, one tag per field, is read all the same and replaced at the next write. A rerun after a crash reads it and
resumes; scale-down reads it to restore. Nodes we cordoned carry the annotation CORDONED_BY_ANNOTATION instead (node
state lives on nodes): the run id and what that run set (drain.py).

The phase is the state machine of an upgrade, and it names the phase a rerun resumes in:

- ``setup``: launch_template_version starts the journal (Journal.start), or retargets an unfinished one
  (Journal.retargeted, the one move back to setup: only with force_new_target);
- ``scale_up``: asg_surge, before it changes the sizes;
- ``upgrade``: asg_surge, once the new capacity is Ready: a rerun then goes on with the old nodes' batches
  (asg_instance_terminate and node_drain record what they do, not a phase);
- ``scale_down``: nodegroup_scale_restore, before it restores the sizes; it clears the journal when done.

Every other move goes through Journal.advanced, which never moves the phase back: a rerun of an earlier step
(asg_surge after a crash in the upgrade) leaves the journal where the upgrade is.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any
import datetime
import uuid

from ansible_collections.eksops.nodegroup.plugins.module_utils.aws import autoscaling as autoscaling_api
from ansible_collections.eksops.nodegroup.plugins.module_utils.host.clock import utc_now_iso
from ansible_collections.eksops.nodegroup.plugins.module_utils.errors import (
    API_ERROR,
    INVALID_PARAMETER,
    UpgradeError,
)

TAG_PREFIX = "eksops.nodegroup/"
# Set and read by the drain engine on the nodes it cordons (drain.py imports it from here).
CORDONED_BY_ANNOTATION = TAG_PREFIX + "cordoned-by"
# SPEC B1: the new nodes of the scale-up the group will not keep under the schedule once (value: the run_id);
# cordoned and excluded from load balancers, removed empty at the scale-down (nodegroup/schedule_state.py).
SURPLUS_ANNOTATION = TAG_PREFIX + "surplus"
# AWS's limit on the value of an Auto Scaling group tag.
MAX_TAG_VALUE_LENGTH = 256

PHASES = ("setup", "scale_up", "upgrade", "scale_down")

_STR, _INT, _LIST, _COUNTS = "str", "int", "list", "counts"
# Field name -> value kind; the order is the order of the tags written.
FIELDS = (
    ("run_id", _STR),
    ("phase", _STR),
    ("strategy", _STR),
    ("started_at", _STR),
    ("original_min_size", _INT),
    ("original_max_size", _INT),
    ("original_desired_capacity", _INT),
    ("previous_launch_template_version", _STR),
    ("target_launch_template_version", _STR),
    ("launch_template_id", _STR),
    ("target_image_id", _STR),
    ("suspended_processes", _LIST),
    ("desired_capacity_set", _INT),
    # The desired capacity a decrementing termination under way leaves (recorded before it, SPEC C3).
    ("desired_capacity_pending", _INT),
    ("surge", _INT),
    # Issue 10 item 22: "ours" when the upgrade protects the group's instances from scale-in (and removes the
    # protection at restore), "theirs" when the group used scale-in protection before and is left alone.
    ("scale_in_protection", _STR),
    # SPEC B1 (issue 11 item 1): the schedule of the upgrade (once or eks) and the instances per Availability Zone
    # before the scale-up (tag ``az=count,az=count``), recorded by asg_surge before the surge (SPEC C3) and never
    # recomputed by a rerun: the numbers the group ends with under the schedule ``once``.
    ("schedule", _STR),
    ("start_per_az", _COUNTS),
    # Issue 29 item 4: the MinSize and MaxSize the upgrade last set, one tag ``min_size=n,max_size=m`` with the sizes
    # it changed (recorded before the change): at the restore, a size that is neither this nor the original was
    # changed by someone else, and is kept.
    ("sizes_set", _COUNTS),
    # Issue 27 item 3: the target version an abort with rollback=true is rolling the group back from (recorded before
    # the journal is retargeted at previous_launch_template_version), so a rerun of the abort goes on rolling back.
    ("rollback_of", _STR),
    # Issue 27 item 1: the workloads a failed health gate left unhealthy (plan/workload_health.record_failed_gate),
    # which a rerun judges again before its next batch; unset once they pass, and when the journal is retargeted or
    # becomes a rollback (the target they were judged on is no longer the target).
    ("health_gate_failed", _STR),
)
FIELD_NAMES = tuple(name for name, _kind in FIELDS)
_FIELD_KINDS = dict(FIELDS)
# Tag name -> the fields it holds. A group of several fields is written "field=value;field=value" (no value has a
# ";" or, outside the one-field tags, a "="); each fits an Auto Scaling tag value's 256 characters.
TAG_GROUPS = (
    ("run", ("run_id", "phase", "strategy", "started_at", "schedule", "scale_in_protection", "rollback_of")),
    ("sizes", ("original_min_size", "original_max_size", "original_desired_capacity", "desired_capacity_set",
               "desired_capacity_pending", "surge")),
    ("target", ("launch_template_id", "previous_launch_template_version", "target_launch_template_version",
                "target_image_id")),
    ("suspended_processes", ("suspended_processes",)),
    ("start_per_az", ("start_per_az",)),
    ("sizes_set", ("sizes_set",)),
    ("health_gate", ("health_gate_failed",)),
)
# The tags of an earlier release's journal, one per field, that no TAG_GROUPS tag reuses.
LEGACY_KEYS = tuple(TAG_PREFIX + name for name in FIELD_NAMES if name not in dict(TAG_GROUPS))


def new_run_id() -> str:
    return uuid.uuid4().hex[:16]


def tag_key(field: str) -> str:
    return TAG_PREFIX + field


def _corrupt(asg_name: str | None, key: str, value: str | None, why: str) -> UpgradeError:
    return UpgradeError(
        INVALID_PARAMETER,
        "The upgrade journal on Auto Scaling group %s is unreadable: tag %s=%r %s; fix or delete the %s* tags"
        % (asg_name or "?", key, value, why, TAG_PREFIX),
        parameter="asg_name", tag=key)


def _decode(field: str, raw: str | None, asg_name: str | None, key: str) -> str | int | list[str] | None:
    """A field's value from its raw text, read from tag ``key`` (named when the text is unreadable)."""
    kind = _FIELD_KINDS[field]
    if kind == _INT:
        try:
            return int(raw)
        except (TypeError, ValueError):
            raise _corrupt(asg_name, key, raw, "is not an integer")
    if kind == _LIST:
        return [item for item in raw.split(",") if item] if raw else []
    if kind == _COUNTS:
        return decode_counts(raw, lambda why: _corrupt(asg_name, key, raw, why))
    if field == "phase" and raw not in PHASES:
        raise _corrupt(asg_name, key, raw, "is not one of %s" % ", ".join(PHASES))
    return raw


def _split_group(group: str, fields: tuple[str, ...], raw: str | None, asg_name: str | None) -> dict[str, str]:
    """{field: raw value} of one TAG_GROUPS tag."""
    if len(fields) == 1:
        return {fields[0]: raw or ""}
    found = {}
    for pair in (raw or "").split(";"):
        name, sep, value = pair.partition("=")
        if not sep or name not in fields:
            raise _corrupt(asg_name, tag_key(group), raw, "is not a list of field=value of %s" % ", ".join(fields))
        found[name] = value
    return found


def decode_counts(raw: str | None, error: Any) -> dict[str, int]:
    """``az=count,az=count`` as {az: count}; ``error(why)`` is the exception for a malformed value."""
    counts = {}
    for item in (raw or "").split(","):
        if not item:
            continue
        key, sep, value = item.partition("=")
        if not sep or not key:
            raise error("is not a list of zone=count")
        try:
            counts[key] = int(value)
        except ValueError:
            raise error("has a count that is not an integer")
        if counts[key] < 0:
            raise error("has a negative count")
    return counts


def _encode(field: str, value: Any) -> str:
    if _FIELD_KINDS[field] == _LIST:
        return ",".join(str(item) for item in value)
    if _FIELD_KINDS[field] == _COUNTS:
        return ",".join("%s=%d" % (key, int(count)) for key, count in value.items())
    return str(value)


class Journal:
    """The journal fields (see FIELDS); unset fields are None (suspended_processes defaults to [])."""

    def __init__(self, **fields: Any) -> None:
        unknown = sorted(set(fields) - set(FIELD_NAMES))
        if unknown:
            raise TypeError("unknown journal field(s): %s" % ", ".join(unknown))
        if fields.get("phase") is not None and fields["phase"] not in PHASES:
            raise ValueError("phase must be one of %s, got %r" % (", ".join(PHASES), fields["phase"]))
        for name in FIELD_NAMES:
            default = [] if _FIELD_KINDS[name] == _LIST else None
            value = fields.get(name, default)
            if _FIELD_KINDS[name] == _LIST:
                value = list(value or [])
            elif _FIELD_KINDS[name] == _COUNTS and value is not None:
                value = dict((str(key), int(count)) for key, count in value.items())
            setattr(self, name, value)
        # The earlier release's tags it was read from (from_tags), which the next write removes.
        self.legacy_keys: list[str] = []

    @classmethod
    def start(cls, phase: str = "setup", run_id: str | None = None, now: datetime.datetime | None = None, **fields: Any) -> Journal:
        """A new journal with run_id and started_at filled in."""
        return cls(phase=phase, run_id=run_id or new_run_id(), started_at=utc_now_iso(now), **fields)

    @classmethod
    def from_tags(cls, tags: Iterable[Mapping[str, str]] | dict[str, str] | None, asg_name: str | None = None) -> Journal | None:
        """The journal in an ASG's tags (AWS tag list or {key: value}), or None when there is none."""
        if tags is None:
            return None
        if isinstance(tags, dict):
            pairs = tags.items()
        else:
            pairs = ((tag["Key"], tag.get("Value", "")) for tag in tags)
        groups = dict(TAG_GROUPS)
        raw_fields, legacy = {}, []
        for key, raw in pairs:
            name = key[len(TAG_PREFIX):] if key.startswith(TAG_PREFIX) else None
            if name in groups:
                raw_fields.update((field, (key, value)) for field, value in
                                  _split_group(name, groups[name], raw, asg_name).items())
            elif key in LEGACY_KEYS:  # one tag per field, as an earlier release wrote it
                raw_fields.setdefault(name, (key, raw))
                legacy.append(key)
        if not raw_fields:
            return None
        journal = cls(**dict((field, _decode(field, raw, asg_name, key)) for field, (key, raw) in raw_fields.items()))
        journal.legacy_keys = sorted(legacy)
        return journal

    def to_dict(self) -> dict[str, Any]:
        def copy(name: str) -> Any:
            value = getattr(self, name)
            if _FIELD_KINDS[name] == _LIST:
                return list(value)
            if _FIELD_KINDS[name] == _COUNTS and value is not None:
                return dict(value)
            return value
        return dict((name, copy(name)) for name in FIELD_NAMES)

    def replace(self, **changes: Any) -> Journal:
        """A copy with ``changes`` applied."""
        fields = self.to_dict()
        fields.update(changes)
        return Journal(**fields)

    def advanced(self, phase: str, **changes: Any) -> Journal:
        """A copy in the later of its phase and ``phase`` (the phase never moves back), with ``changes``."""
        if self.phase is not None and PHASES.index(phase) < PHASES.index(self.phase):
            phase = self.phase
        return self.replace(phase=phase, **changes)

    def retargeted(self, launch_template_id: str, target_launch_template_version: int | str, target_image_id: str | None,
                   previous_launch_template_version: int | str | None) -> Journal:
        """Back to setup, aimed at another target (force_new_target). The original sizes, suspended processes and
        run id stay: they still describe the group's real state; the version before the upgrade stays too. A failed
        health gate's record goes (issue 27 item 1): its workloads were judged on the target left, and judging them
        first would stop the run to the new one (a rollback's, the version before) on what it replaces."""
        return self.replace(phase="setup", health_gate_failed=None, launch_template_id=launch_template_id,
                            target_launch_template_version=target_launch_template_version,
                            target_image_id=target_image_id,
                            previous_launch_template_version=self.previous_launch_template_version
                            or previous_launch_template_version)

    def size_set(self, size: str, value: int, before: int) -> Journal:
        """Issue 29 item 4: the journal once the upgrade sets ``size`` (min_size, max_size) from ``before`` to
        ``value``, recorded in sizes_set (itself when the size does not change)."""
        if value == before:
            return self
        return self.replace(sizes_set=dict(self.sizes_set or {}, **{size: value}))

    def adopt_desired_capacity(self, desired_now: int) -> Journal:
        """Issue 10 item 23 (accept_current_capacity): keep the change someone else made to the desired capacity.
        A raise (the cluster autoscaler adding nodes for pending pods) is kept on top of the size the group returns
        to at the end; a lower value (a Terraform apply, a person) is the size wanted at the end when it is below
        that size. ``desired_now`` becomes the capacity the upgrade set, so the upgrade goes on."""
        desired_now = int(desired_now)
        delta = desired_now - int(self.desired_capacity_set)
        original = self.original_desired_capacity
        if original is not None:
            original = original + delta if delta > 0 else min(original, desired_now)
        return self.replace(original_desired_capacity=original, desired_capacity_set=desired_now,
                            desired_capacity_pending=None)

    def to_tags(self) -> dict[str, str]:
        """{tag key: value} of every TAG_GROUPS tag with a set field, in TAG_GROUPS order."""
        tags = {}
        for group, fields in TAG_GROUPS:
            values = [(name, _encode(name, getattr(self, name))) for name in fields if getattr(self, name) is not None]
            if not values:
                continue
            encoded = values[0][1] if len(fields) == 1 else ";".join("%s=%s" % pair for pair in values)
            if len(encoded) > MAX_TAG_VALUE_LENGTH:
                raise UpgradeError(API_ERROR, "The upgrade journal cannot record %s: its value is longer than the "
                                   "%d characters an Auto Scaling tag value may have" % (group, MAX_TAG_VALUE_LENGTH),
                                   journal_field=group, value=encoded)
            tags[tag_key(group)] = encoded
        return tags

    def unset_tags(self) -> list[str]:
        """The TAG_GROUPS tags this journal does not write (every field of theirs unset)."""
        return [tag_key(group) for group, fields in TAG_GROUPS if all(getattr(self, name) is None for name in fields)]

    def targets(self, launch_template_id: str | None, launch_template_version: int | str) -> bool:
        """Whether this journal's upgrade is aimed at that launch template version."""
        return (self.launch_template_id == launch_template_id
                and str(self.target_launch_template_version) == str(launch_template_version))

    def __eq__(self, other: object) -> bool:
        return isinstance(other, Journal) and self.to_dict() == other.to_dict()

    def __ne__(self, other: object) -> bool:
        return not self.__eq__(other)

    def __repr__(self) -> str:
        return "Journal(%s)" % ", ".join("%s=%r" % item for item in self.to_dict().items() if item[1] is not None)


def write_journal(autoscaling: Any, asg_name: str, journal: Journal, previous: Journal | None = None) -> None:
    """Record ``journal`` on the ASG: the tags of set fields are written, the others removed.

    ``previous``: the journal on the ASG now, when the caller knows it (``Journal()`` for none); then only
    the tags it has and ``journal`` lacks are deleted, instead of every unset one. Without it, an earlier release's
    one-tag-per-field journal is removed too (it was just read into ``journal``).
    An AWS error is an UpgradeError with a U8 code (aws/client.py translates it), as are those of read_journal and
    clear_journal.
    """
    unset = journal.unset_tags()
    if previous is not None:
        already_unset = set(previous.unset_tags())
        unset = [key for key in unset if key not in already_unset] + previous.legacy_keys
    else:
        unset.extend(LEGACY_KEYS)
    autoscaling_api.create_or_update_tags(autoscaling, asg_name, journal.to_tags())
    autoscaling_api.delete_tags(autoscaling, asg_name, unset)


def _asg_tags(autoscaling: Any, asg_name: str) -> list[dict[str, Any]]:
    group = autoscaling_api.describe_auto_scaling_group(autoscaling, asg_name)
    return group.get("Tags", []) if group else []


def read_journal(autoscaling: Any, asg_name: str) -> Journal | None:
    """The journal on the ASG now, or None."""
    return Journal.from_tags(_asg_tags(autoscaling, asg_name), asg_name=asg_name)


def clear_journal(autoscaling: Any, asg_name: str, tags: Iterable[Mapping[str, str]] | None = None) -> list[str]:
    """Remove every journal tag from the ASG (``tags``: the ASG's tags if already described). Returns the keys."""
    if tags is None:
        tags = _asg_tags(autoscaling, asg_name)
    keys = sorted(tag["Key"] for tag in tags if tag["Key"].startswith(TAG_PREFIX))
    autoscaling_api.delete_tags(autoscaling, asg_name, keys)
    return keys
