# -*- coding: utf-8 -*-
# Copyright: Contributors to the eksops.nodegroup project
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""The pause step (issue 27 item 3): nodegroup_pause's work. Ask the run upgrading a self-managed node group to
pause at its next safe point (state present: the tag of nodegroup/pause.py), or withdraw the request (absent); with
``wait``, until the run has stopped: its lease released or lapsed (nodegroup/lease.py), or its journal gone (it
finished first).

A group with no upgrade under way (no journal, no live lease) is left alone with a warning: a request written there
would only stop the next upgrade at its first safe point. An EKS managed node group is refused (SPEC K3): its Auto
Scaling group is EKS's, and EKS offers no pause of its update.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import TYPE_CHECKING, Any
import datetime

from ansible_collections.eksops.nodegroup.plugins.module_utils.errors import WAIT_TIMEOUT, UpgradeError, invalid_parameter
from ansible_collections.eksops.nodegroup.plugins.module_utils.host.clock import SYSTEM_CLOCK, Clock, utc_now, utc_now_iso
from ansible_collections.eksops.nodegroup.plugins.module_utils.nodegroup.discovery import (
    NODEGROUP_ARGUMENT_SPEC,
    NodegroupRef,
    describe_asg,
    find_module_nodegroup,
)
from ansible_collections.eksops.nodegroup.plugins.module_utils.nodegroup.journal import Journal
from ansible_collections.eksops.nodegroup.plugins.module_utils.nodegroup.kinds import MANAGED
from ansible_collections.eksops.nodegroup.plugins.module_utils.nodegroup.lease import lease_of
from ansible_collections.eksops.nodegroup.plugins.module_utils.nodegroup.pause import (
    PAUSE_TAG,
    PauseRequest,
    check_requested_by,
    clear_pause,
    pause_request,
    request_pause,
    request_summary,
)

if TYPE_CHECKING:
    from ansible_collections.eksops.nodegroup.plugins.module_utils.host.module import EksopsModule

ARGUMENT_SPEC = dict(
    NODEGROUP_ARGUMENT_SPEC,
    state=dict(type="str", choices=["present", "absent"], default="present"),
    requested_by=dict(type="str"),
    wait=dict(type="bool", default=False),
    # A batch may take its drain_timeout, post_drain_wait, termination and new nodes' wait (15 minutes each).
    wait_timeout=dict(type="int", default=3600),
)
# How often the wait reads the group's tags.
POLL_SECONDS = 5


def live_lease(tags: Iterable[Mapping[str, str]] | None,
               now: datetime.datetime | None = None) -> tuple[str, datetime.datetime] | None:
    """The lease in ``tags`` while a run holds it (renewed, not lapsed), else None: the run has stopped."""
    lease = lease_of(tags)
    return lease if lease is not None and lease[1] > (now or utc_now()) else None


def upgrade_state(asg: Mapping[str, Any], now: datetime.datetime | None = None) -> dict[str, Any]:
    """What the group's tags say of its upgrade: journal (run id and phase), the live run's lease, the request."""
    tags = asg.get("Tags")
    journal = Journal.from_tags(tags, asg_name=asg["AutoScalingGroupName"])
    lease = live_lease(tags, now)
    return dict(upgrade_in_progress=journal is not None or lease is not None,
                run_id=journal.run_id if journal is not None else None,
                phase=journal.phase if journal is not None else None,
                run_live=lease is not None, lease_holder=lease[0] if lease is not None else None,
                lease_expires=utc_now_iso(lease[1]) if lease is not None else None)


def managed_refusal(group: NodegroupRef, action: str) -> UpgradeError:
    """SPEC K3: a managed node group's update is EKS's to run; there is no pause of it to ask for."""
    return invalid_parameter(
        "nodegroup_name", "Node group %s of cluster %s is an EKS managed node group: EKS runs its update, on an Auto "
        "Scaling group that is EKS's (%s), and offers no way to pause or cancel an update once started "
        "(UpdateNodegroupVersion has no counterpart). This collection cannot %s; it only follows EKS's update to its "
        "end. Nothing was changed." % (group.nodegroup_name, group.cluster_name, group.asg_name, action),
        kind=group.kind, asg_name=group.asg_name)


def validate_params(params: Mapping[str, Any]) -> None:
    if params["wait_timeout"] < 1:
        raise invalid_parameter("wait_timeout", "wait_timeout must be >= 1 (seconds), got %d" % params["wait_timeout"])
    check_requested_by(params["requested_by"])


def wait_stopped(autoscaling: Any, asg_name: str, timeout: int, clock: Clock) -> tuple[dict[str, Any], float]:
    """Until no live run holds the group's lease; (the group's upgrade_state then, seconds waited). WaitTimeout
    after ``timeout`` seconds: the request stays, the run stops at its next safe point all the same."""
    started = clock.now()
    while True:
        state = upgrade_state(describe_asg(autoscaling, asg_name))
        if not state["run_live"]:
            return state, round(clock.now() - started, 1)
        if clock.now() - started >= timeout:
            raise UpgradeError(
                WAIT_TIMEOUT,
                "The run upgrading Auto Scaling group %s (run %s, phase %s, lease %s renewed until %s) has not stopped "
                "within %d s (wait_timeout): it is inside a batch or phase, and stops at its next safe point. The "
                "pause request stays (tag %s); wait longer, or withdraw it with state=absent."
                % (asg_name, state["run_id"], state["phase"], state["lease_holder"], state["lease_expires"], timeout,
                   PAUSE_TAG), asg_name=asg_name, **state)
        clock.sleep(POLL_SECONDS)


def run(module: EksopsModule, clock: Clock | None = None) -> dict[str, Any]:
    """The module's result: changed, pause (the request and the upgrade's state), and the diff."""
    params = module.params
    validate_params(params)
    group = find_module_nodegroup(module)
    if group.kind == MANAGED:
        raise managed_refusal(group, "ask its update to pause" if params["state"] == "present"
                              else "withdraw a pause of its update")
    autoscaling, asg, name = module.aws("autoscaling"), group.asg, group.asg_name
    request, state = pause_request(asg.get("Tags")), upgrade_state(asg)
    before = request
    if params["state"] == "absent":
        if request is not None and not module.check_mode:
            clear_pause(autoscaling, asg)
        request = None
    elif not state["upgrade_in_progress"]:
        module.warn("Auto Scaling group %s has no upgrade under way (no journal, no live run): nothing to pause, no "
                    "request written." % name)
    elif request is None:
        request = PauseRequest(utc_now(), (params["requested_by"] or "").strip()) if module.check_mode \
            else request_pause(autoscaling, name, params["requested_by"])
    pause = dict(asg_name=name, waited_seconds=0.0, **request_summary(request))
    pause.update(state)
    if params["state"] == "present" and params["wait"] and state["upgrade_in_progress"] and not module.check_mode:
        try:
            state, pause["waited_seconds"] = wait_stopped(autoscaling, name, params["wait_timeout"],
                                                          clock or SYSTEM_CLOCK)
        except UpgradeError as err:
            # Say whether this task wrote the request: a caller that gives up (role abort_upgrade) withdraws its own.
            module.fail_upgrade(err, changed=request != before, pause=pause)
        pause.update(state)
    return module.with_diff(dict(changed=request != before, pause=pause),
                            before=dict(asg_name=name, **request_summary(before)),
                            after=dict(asg_name=name, **request_summary(request)))
