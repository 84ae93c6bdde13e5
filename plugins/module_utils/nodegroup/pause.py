# -*- coding: utf-8 -*-
# Copyright: Contributors to the eksops.nodegroup project
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""A request to pause a running upgrade (issue 27 item 3): one tag on the Auto Scaling group, beside the journal.

The run and whoever asks it to pause share nothing but the group, so the request is written where the run already
reads: tag ``eksops.nodegroup/pause`` = ``<requested at, ISO 8601 UTC> <requested by>``. The run reads it at each
safe point (before each batch, between phases: gates/safe_points.py) and stops there with UpgradePaused, leaving the
journal for the upgrade playbook's next run, which resumes. Only self-managed groups carry it: an EKS managed node
group's Auto Scaling group is EKS's (SPEC K3), and EKS offers no pause of its update.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any
import datetime

from ansible_collections.eksops.nodegroup.plugins.module_utils.aws import autoscaling as autoscaling_api
from ansible_collections.eksops.nodegroup.plugins.module_utils.errors import UPGRADE_PAUSED, UpgradeError, invalid_parameter
from ansible_collections.eksops.nodegroup.plugins.module_utils.host.clock import parse_utc_iso, utc_now, utc_now_iso
from ansible_collections.eksops.nodegroup.plugins.module_utils.nodegroup.journal import MAX_TAG_VALUE_LENGTH, TAG_PREFIX

PAUSE_TAG = TAG_PREFIX + "pause"
# What a requested_by may take of the tag's value: the rest is the time and the space before it.
REQUESTED_BY_MAX = MAX_TAG_VALUE_LENGTH - len(utc_now_iso()) - 1


@dataclass(frozen=True)
class PauseRequest:
    """When the pause was asked for, and by whom (free text: a user, an AWX job)."""

    requested_at: datetime.datetime
    requested_by: str

    def asked_at(self) -> str | None:
        """When it was asked for (ISO 8601 UTC), or None when the tag did not say."""
        return utc_now_iso(self.requested_at) if self.requested_at.year > 1 else None

    def to_tag_value(self) -> str:
        return ("%s %s" % (utc_now_iso(self.requested_at), self.requested_by)).strip()


def parse_pause(value: str | None) -> PauseRequest | None:
    """The request in the tag's value; a value whose time is unreadable is still a request (asked at an unknown
    time): a person who wrote the tag by hand asked for a pause all the same."""
    when, _sep, by = (value or "").strip().partition(" ")
    at = parse_utc_iso(when)
    if at is None:
        return PauseRequest(datetime.datetime.min.replace(tzinfo=datetime.timezone.utc), (value or "").strip())
    return PauseRequest(at, by.strip())


def pause_request(tags: Iterable[Mapping[str, str]] | None) -> PauseRequest | None:
    """The pause request in an Auto Scaling group's tags (AWS tag list), or None."""
    for tag in tags or []:
        if tag["Key"] == PAUSE_TAG:
            return parse_pause(tag.get("Value"))
    return None


def paused_error(asg_name: str, request: PauseRequest, where: str) -> UpgradeError:
    """UpgradePaused at the safe point ``where`` (e.g. "before batch 3"), saying how to resume."""
    asked = "at %s" % request.asked_at() if request.asked_at() else "at an unknown time"
    by = " by %s" % request.requested_by if request.requested_by else ""
    return UpgradeError(
        UPGRADE_PAUSED,
        "Paused %s, as asked %s%s (tag %s on Auto Scaling group %s). The journal keeps where the upgrade stands; run "
        "the upgrade playbook again to resume, or playbooks/abort_upgrade.yml to end it." % (
            where, asked, by, PAUSE_TAG, asg_name),
        asg_name=asg_name, stopped_at=where, requested_by=request.requested_by or None)


def check_requested_by(requested_by: str | None) -> None:
    """Refuse, naming requested_by, a value the tag could not hold whole."""
    if requested_by and len(requested_by) > REQUESTED_BY_MAX:
        raise invalid_parameter("requested_by", "requested_by takes at most %d characters (the rest of the tag's %d "
                                "is the time of the request), got %d" % (REQUESTED_BY_MAX, MAX_TAG_VALUE_LENGTH,
                                                                         len(requested_by)))


def request_pause(autoscaling: Any, asg_name: str, requested_by: str | None,
                  now: datetime.datetime | None = None) -> PauseRequest:
    """Ask the run upgrading ``asg_name`` to pause at its next safe point: write the tag (a request already there
    is replaced, with this time and requester). Returns the request written."""
    request = PauseRequest(now or utc_now(), (requested_by or "").strip())
    autoscaling_api.create_or_update_tags(autoscaling, asg_name, {PAUSE_TAG: request.to_tag_value()})
    return request


def clear_pause(autoscaling: Any, asg: Mapping[str, Any]) -> PauseRequest | None:
    """Withdraw the pause request on ``asg`` (its description), if it has one; returns the request withdrawn."""
    request = pause_request(asg.get("Tags"))
    if request is not None:
        autoscaling_api.delete_tags(autoscaling, asg["AutoScalingGroupName"], [PAUSE_TAG])
    return request


def request_summary(request: PauseRequest | None) -> dict[str, Any]:
    """The request for a module's result: requested, requested_at (null when unknown), requested_by."""
    if request is None:
        return dict(requested=False, requested_at=None, requested_by=None)
    return dict(requested=True, requested_at=request.asked_at(), requested_by=request.requested_by or None)
