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
import datetime

from ansible_collections.eksops.nodegroup.plugins.module_utils.errors import UPGRADE_PAUSED, UpgradeError
from ansible_collections.eksops.nodegroup.plugins.module_utils.host.clock import parse_utc_iso, utc_now_iso
from ansible_collections.eksops.nodegroup.plugins.module_utils.nodegroup.journal import TAG_PREFIX

PAUSE_TAG = TAG_PREFIX + "pause"


@dataclass(frozen=True)
class PauseRequest:
    """When the pause was asked for, and by whom (free text: a user, an AWX job)."""

    requested_at: datetime.datetime
    requested_by: str

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
    asked = "at %s" % utc_now_iso(request.requested_at) if request.requested_at.year > 1 else "at an unknown time"
    by = " by %s" % request.requested_by if request.requested_by else ""
    return UpgradeError(
        UPGRADE_PAUSED,
        "Paused %s, as asked %s%s (tag %s on Auto Scaling group %s). The journal keeps where the upgrade stands; run "
        "the upgrade playbook again to resume, or playbooks/abort_upgrade.yml to end it." % (
            where, asked, by, PAUSE_TAG, asg_name),
        asg_name=asg_name, stopped_at=where, requested_by=request.requested_by or None)
