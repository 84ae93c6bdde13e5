# -*- coding: utf-8 -*-
# Copyright: Contributors to the eksops.nodegroup project
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""One run at a time on a node group (issue 10 item 21): a lease on the Auto Scaling group's tags.

Two runs on one group (AWX's "allow simultaneous", two engineers at two terminals) drained and terminated side by
side, because the journal says what an upgrade did, not whether the run that wrote it is alive. The playbooks
draw a lease id per run (role nodegroup_upgrade) and pass it to every module that changes the group; before its
first change, each module claims the lease:

- tag ``eksops.nodegroup/lease`` = ``<lease id> <expiry, ISO 8601 UTC>``;
- free, expired or already ours: written with a new expiry, then read back after a moment, so that of two runs
  claiming together only the one whose write stayed goes on (tags are last-writer-wins; the window left is the
  read-back delay, LEASE_SETTLE_SECONDS);
- held by another run and not expired: refused with UpgradeInProgress, naming that run (the journal's run id and
  start time) and when its lease ends;
- renewed every LEASE_RENEW_SECONDS by a heartbeat thread while the module runs, so a long drain keeps it.

A run that dies keeps the lease until it expires (LEASE_SECONDS): the rerun is refused until then and says when.
A failed run releases it (module nodegroup_lease); the restore clears it with the journal. A run whose job is gone
(cancelled, timed out, killed: host/job_guard.py, SPEC W5) renews it no more, and the action that stopped releases it
(plugin_utils/controller_action.py), so a relaunch is not refused. Modules called
without a lease id (roles used on their own) neither claim nor check it.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping
from typing import TYPE_CHECKING, Any
import datetime
import threading
import time

from ansible_collections.eksops.nodegroup.plugins.module_utils.host import job_guard
from ansible_collections.eksops.nodegroup.plugins.module_utils.host.clock import parse_utc_iso, utc_now, utc_now_iso
from ansible_collections.eksops.nodegroup.plugins.module_utils.aws import autoscaling as autoscaling_api
from ansible_collections.eksops.nodegroup.plugins.module_utils.errors import TAG_LIMIT_EXCEEDED, UPGRADE_IN_PROGRESS, UpgradeError
from ansible_collections.eksops.nodegroup.plugins.module_utils.nodegroup.journal import (
    TAG_GROUPS,
    TAG_PREFIX,
    Journal,
    tag_key,
)

if TYPE_CHECKING:
    from ansible_collections.eksops.nodegroup.plugins.module_utils.host.module import EksopsModule

LEASE_TAG = TAG_PREFIX + "lease"
# "The maximum number of tags per resource is 50" (Auto Scaling user guide, "Tag Auto Scaling groups and instances").
ASG_TAG_LIMIT = 50
# The tag of a failed health gate's record (issue 27 item 1): the journal writes it only when a gate fails, and
# removes it once a rerun judged its workloads again; the tag budget counts it only while the group holds it.
HEALTH_GATE_TAG = tag_key("health_gate")
# The tags an upgrade may hold on its group at once: a journal with every field set but that record, the lease, and
# a pause request (nodegroup/pause.py, issue 27 item 3).
UPGRADE_TAGS_MAX = sum(1 for group, _fields in TAG_GROUPS if tag_key(group) != HEALTH_GATE_TAG) + 2
LEASE_SECONDS = 60
LEASE_RENEW_SECONDS = 15
LEASE_SETTLE_SECONDS = 1.0
LEASE_OPTION = dict(lease_id=dict(type="str"))


def parse_lease(value: str | None) -> tuple[str, datetime.datetime] | None:
    """(holder, expiry datetime) from the tag's value, or None when it is unreadable (then it is no lease)."""
    holder, _sep, expiry = (value or "").partition(" ")
    expires = parse_utc_iso(expiry)
    return (holder, expires) if holder and expires else None


def lease_of(tags: Iterable[Mapping[str, str]] | None) -> tuple[str, datetime.datetime] | None:
    """The lease in an ASG's tags (AWS tag list), or None."""
    for tag in tags or []:
        if tag["Key"] == LEASE_TAG:
            return parse_lease(tag.get("Value"))
    return None


def lease_value(lease_id: str, now: datetime.datetime | None = None, seconds: float = LEASE_SECONDS) -> str:
    return "%s %s" % (lease_id, utc_now_iso((now or utc_now()) + datetime.timedelta(seconds=seconds)))


def held_by_another(lease: tuple[str, datetime.datetime] | None, lease_id: str, now: datetime.datetime | None = None) -> bool:
    """True when ``lease`` (parse_lease) belongs to another run and has not expired."""
    return lease is not None and lease[0] != lease_id and lease[1] > (now or utc_now())


def renewed(lease: tuple[str, datetime.datetime] | None, lease_id: str, now: datetime.datetime | None = None) -> bool:
    """True when ``lease`` is ``lease_id``'s and was renewed within two heartbeats (LEASE_RENEW_SECONDS): more than
    LEASE_SECONDS - 2 x LEASE_RENEW_SECONDS are left."""
    left = LEASE_SECONDS - 2 * LEASE_RENEW_SECONDS
    return lease is not None and lease[0] == lease_id and lease[1] > (now or utc_now()) + datetime.timedelta(seconds=left)


def in_progress_error(asg: Mapping[str, Any], lease: tuple[str, datetime.datetime]) -> UpgradeError:
    """UpgradeInProgress, naming the run that holds the lease (its journal's run id and start time)."""
    name = asg["AutoScalingGroupName"]
    journal = Journal.from_tags(asg.get("Tags"), asg_name=name)
    run = ("run %s, started %s" % (journal.run_id, journal.started_at)) if journal is not None else "no journal yet"
    expires = utc_now_iso(lease[1])
    return UpgradeError(
        UPGRADE_IN_PROGRESS,
        "Another run is upgrading Auto Scaling group %s (%s; lease %s, renewed until %s): refusing, so that two runs "
        "do not drain and terminate side by side. Wait for it to finish; if it is gone (killed), its lease ends at %s "
        "and a rerun then takes over its journal." % (name, run, lease[0], expires, expires),
        asg_name=name, lease_holder=lease[0], lease_expires=expires,
        run_id=journal.run_id if journal is not None else None,
        started_at=journal.started_at if journal is not None else None)


def _write(autoscaling: Any, asg_name: str, lease_id: str) -> None:
    autoscaling_api.create_or_update_tags(autoscaling, asg_name, {LEASE_TAG: lease_value(lease_id)})


def _read(autoscaling: Any, asg_name: str) -> dict[str, Any]:
    return autoscaling_api.describe_auto_scaling_group(autoscaling, asg_name) or {"AutoScalingGroupName": asg_name}


class Heartbeat(object):
    """Renews the lease every LEASE_RENEW_SECONDS while it is ours, until stop() or the end of the process
    (daemon thread)."""

    def __init__(self, autoscaling: Any, asg_name: str, lease_id: str) -> None:
        self.autoscaling = autoscaling
        self.asg_name = asg_name
        self.lease_id = lease_id
        self.lost_to = None
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, name="eksops-lease-heartbeat")
        self._thread.daemon = True

    def start(self) -> Heartbeat:
        self._thread.start()
        return self

    def stop(self) -> None:
        self._stop.set()

    def alive(self) -> bool:
        return self._thread.is_alive() and not self._stop.is_set()

    def beat(self) -> bool:
        """One renewal; returns False (and remembers the holder) when another run has taken the lease, or when the
        job is gone (SPEC W5: a worker that outlives its job never keeps the lease from the relaunch)."""
        if job_guard.current().gone() is not None:
            self.stop()
            return False
        lease = lease_of(_read(self.autoscaling, self.asg_name).get("Tags"))
        if lease is None or lease[0] != self.lease_id:
            # Taken by another run, or gone (the journal cleared, a person who knew the run was dead): not ours
            # to write back.
            self.lost_to = lease[0] if lease is not None else None
            self.stop()
            return False
        if self._stop.is_set():
            return False
        _write(self.autoscaling, self.asg_name, self.lease_id)
        return True

    def _run(self) -> None:
        while not self._stop.wait(LEASE_RENEW_SECONDS):
            try:
                if not self.beat():
                    return
            except Exception:  # pylint: disable=broad-except
                pass  # the next beat tries again; the lease lasts LEASE_SECONDS


def check_tag_budget(asg: Mapping[str, Any]) -> None:
    """SPEC W3: refuse before any change a group whose own tags leave less room than the journal and the lease may
    take: otherwise CreateOrUpdateTags fails half-way through the upgrade. A failed health gate's record counts
    while the group holds it (HEALTH_GATE_TAG): a gate that fails later on a group left no room for it says so in
    its HealthGateFailed (health_gate.HealthGate.wait), and stops the run all the same."""
    tags = asg.get("Tags") or []
    others = sum(1 for tag in tags if not tag["Key"].startswith(TAG_PREFIX))
    needed = UPGRADE_TAGS_MAX + sum(1 for tag in tags if tag["Key"] == HEALTH_GATE_TAG)
    if others + needed <= ASG_TAG_LIMIT:
        return
    raise UpgradeError(
        TAG_LIMIT_EXCEEDED,
        "Auto Scaling group %s has %d tags of its own, and the upgrade's journal, lease and pause request may take %d more: more "
        "than the %d an Auto Scaling group can have. Remove at least %d of its tags (they are propagated to new "
        "instances only if PropagateAtLaunch), then run again. Nothing was changed."
        % (asg["AutoScalingGroupName"], others, needed, ASG_TAG_LIMIT, others + needed - ASG_TAG_LIMIT),
        tags=others, tags_needed=needed, tag_limit=ASG_TAG_LIMIT)


def claim(module: EksopsModule, autoscaling: Any, asg: Mapping[str, Any], sleep: Callable[[float], None] = time.sleep) -> Heartbeat | None:
    """Claim the lease for ``module.params["lease_id"]`` before the module's first change (see the module
    docstring); raise UpgradeInProgress when another live run holds it. Returns the Heartbeat, or None without a
    lease id or in check mode (where a lease held by another run is refused all the same)."""
    lease_id = module.params.get("lease_id")
    if not lease_id:
        return None
    lease = lease_of(asg.get("Tags"))
    if held_by_another(lease, lease_id):
        raise in_progress_error(asg, lease)
    if module.check_mode:
        return None
    name = asg["AutoScalingGroupName"]
    # One heartbeat per lease in a process that claims it step after step (the node_replace action keeps them in
    # module.lease_heartbeats and stops them when it ends); a module process claims once.
    heartbeats = getattr(module, "lease_heartbeats", None)
    running = heartbeats.get((name, lease_id)) if heartbeats is not None else None
    if running is not None and running.lost_to is None and running.alive() and renewed(lease, lease_id):
        # Ours, and this process's heartbeat renews it: the batches' steps write no tag of their own.
        return running
    live = running is not None and running.lost_to is None and running.alive()
    heartbeat = running if live else Heartbeat(autoscaling, name, lease_id)
    if heartbeats is not None:
        # Known before the write: a run whose job stops during the claim releases what it wrote (SPEC W5).
        heartbeats[(name, lease_id)] = heartbeat
    _write(autoscaling, name, lease_id)
    if lease is None or lease[0] != lease_id:
        # Taken, not renewed: read back after a moment, in case another run wrote at the same time.
        sleep(LEASE_SETTLE_SECONDS)
        current = _read(autoscaling, name)
        lease = lease_of(current.get("Tags"))
        if lease is not None and lease[0] != lease_id:
            raise in_progress_error(current, lease)
    return heartbeat if live else heartbeat.start()


def release(autoscaling: Any, asg: Mapping[str, Any], lease_id: str) -> bool:
    """Delete the lease when ``lease_id`` holds it; returns whether it did."""
    lease = lease_of(asg.get("Tags"))
    if lease is None or lease[0] != lease_id:
        return False
    name = asg["AutoScalingGroupName"]
    autoscaling_api.delete_tags(autoscaling, name, [LEASE_TAG])
    return True


def release_held(heartbeats: Mapping[tuple[str, str], Heartbeat]) -> list[str]:
    """Stop ``heartbeats`` ((asg name, lease id) -> Heartbeat, a process's) and release the leases they renewed
    that are still theirs; returns the groups released. For a run whose job is gone (SPEC W5)."""
    released = []
    for (asg_name, lease_id), heartbeat in list(heartbeats.items()):
        heartbeat.stop()
        if release(heartbeat.autoscaling, _read(heartbeat.autoscaling, asg_name), lease_id):
            released.append(asg_name)
    return released
