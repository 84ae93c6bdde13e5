# -*- coding: utf-8 -*-
# Copyright: Contributors to the eksops.nodegroup project
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""What a run checks at each safe point (issue 27 items 2, 3 and 4): before each batch or surge step (node_replace)
and before each phase (module upgrade_gate), where stopping leaves nothing half-done and the journal says where the
upgrade stands.

- ``alarm_names``: CloudWatch alarms; any in ALARM stops the run with AlarmTriggered, naming them and their state
  reason, as an Auto Scaling instance refresh's AlarmSpecification stops a refresh ("Add checkpoints and alarms to an
  instance refresh", Amazon EC2 Auto Scaling user guide). A name CloudWatch does not know is refused before any change.
- a pause request on the group (nodegroup/pause.py): UpgradePaused.
- ``maintenance_window`` and ``max_duration_seconds``: work that could not end before the window closes or the run's
  time is up does not start: MaintenanceWindowClosed, saying when the next window opens (plan/maintenance_window.py).

Each stop is an UpgradeError: the run ends there as on any failure (the journal kept, the lease released), and the
wrapper role tells a stop (errors.STOPPED_CODES) from a failure.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from typing import Any
import datetime

from ansible_collections.eksops.nodegroup.plugins.module_utils.aws import cloudwatch
from ansible_collections.eksops.nodegroup.plugins.module_utils.errors import (
    ALARM_TRIGGERED,
    MAINTENANCE_WINDOW_CLOSED,
    UpgradeError,
    invalid_parameter,
)
from ansible_collections.eksops.nodegroup.plugins.module_utils.host.clock import parse_utc_iso, utc_now, utc_now_iso
from ansible_collections.eksops.nodegroup.plugins.module_utils.nodegroup.pause import pause_request, paused_error
from ansible_collections.eksops.nodegroup.plugins.module_utils.plan import maintenance_window as windows

# The safe-point options, as node_replace and upgrade_gate take them.
GATE_ARGUMENT_SPEC = dict(
    alarm_names=dict(type="list", elements="str", default=[]),
    maintenance_window=dict(type="dict"),
    max_duration_seconds=dict(type="int"),
    run_started_at=dict(type="str"),
)


class SafePoints:
    """The checks of one run's safe points, from its validated options (``from_params``: every one read and refused
    before any change, naming the parameter)."""

    def __init__(self, alarm_names: Sequence[str], window: windows.MaintenanceWindow | None,
                 budget_end: datetime.datetime | None, now: Callable[[], datetime.datetime] = utc_now,
                 budget_seconds: int | None = None, cloudwatch_client: Callable[[], Any] | None = None) -> None:
        self.alarm_names = list(alarm_names)
        # The CloudWatch client's factory, called only when alarm_names is set.
        self.cloudwatch_client = cloudwatch_client
        self.window = window
        self.budget_end = budget_end
        self.budget_seconds = budget_seconds
        self.now = now

    @classmethod
    def from_params(cls, params: Mapping[str, Any], cloudwatch_client: Callable[[], Any] | None = None,
                    now: Callable[[], datetime.datetime] = utc_now) -> SafePoints:
        """The run's safe points; ``cloudwatch_client`` (called only when alarm_names is set) checks that every
        alarm exists."""
        window = None
        if params.get("maintenance_window"):
            try:
                window = windows.parse_window(params["maintenance_window"])
            except windows.WindowSpecError as err:
                raise invalid_parameter("maintenance_window", str(err), field=err.field) from None
        budget_end = None
        if params.get("max_duration_seconds") is not None:
            if params["max_duration_seconds"] < 1:
                raise invalid_parameter("max_duration_seconds", "max_duration_seconds must be >= 1, got %d"
                                        % params["max_duration_seconds"])
            started = now()
            if params.get("run_started_at"):
                started = parse_utc_iso(params["run_started_at"])
                if started is None:
                    raise invalid_parameter("run_started_at", "run_started_at must be an ISO 8601 UTC time "
                                            "(2026-11-29T02:00:00Z), got %r" % params["run_started_at"])
            budget_end = started + datetime.timedelta(seconds=params["max_duration_seconds"])
        gates = cls(params.get("alarm_names") or [], window, budget_end, now, params.get("max_duration_seconds"),
                    cloudwatch_client)
        if gates.alarm_names:
            gates.check_alarms_exist(cloudwatch_client())
        return gates

    def check_alarms_exist(self, client: Any) -> None:
        if len(self.alarm_names) > cloudwatch.ALARM_NAMES_MAX:
            raise invalid_parameter("alarm_names", "alarm_names takes at most %d alarms (DescribeAlarms' limit), got %d"
                                    % (cloudwatch.ALARM_NAMES_MAX, len(self.alarm_names)))
        known = {alarm["AlarmName"] for alarm in cloudwatch.describe_alarms(client, self.alarm_names)}
        unknown = [name for name in self.alarm_names if name not in known]
        if unknown:
            raise invalid_parameter("alarm_names", "alarm_names: CloudWatch has no alarm named %s in this region"
                                    % ", ".join(unknown), unknown_alarms=unknown)

    def check(self, where: str, expected_seconds: float,
              asg: Mapping[str, Any] | None = None) -> datetime.datetime | None:
        """Raise the stop due at the safe point ``where`` ("before batch 3") for work expected to take
        ``expected_seconds``: an alarm in ALARM, a pause asked on ``asg`` (its description; None: not read here),
        the window or the run's time. Returns the deadline the work must end by (None: unbounded)."""
        if self.alarm_names:
            self.check_alarms(self.cloudwatch_client(), where)
        request = pause_request((asg or {}).get("Tags"))
        if request is not None:
            raise paused_error(asg["AutoScalingGroupName"], request, where)
        return self.check_time(where, expected_seconds)

    def check_alarms(self, client: Any, where: str) -> None:
        firing = [alarm for alarm in cloudwatch.describe_alarms(client, self.alarm_names)
                  if alarm.get("StateValue") == "ALARM"]
        if firing:
            raise UpgradeError(
                ALARM_TRIGGERED,
                "Stopped %s: CloudWatch alarm%s %s in ALARM (%s). The journal keeps where the upgrade stands: once the "
                "alarm is understood and back to OK, run the upgrade playbook again to go on, or "
                "playbooks/abort_upgrade.yml to end it." % (
                    where, "s" if len(firing) > 1 else "", ", ".join(a["AlarmName"] for a in firing),
                    "; ".join("%s: %s" % (a["AlarmName"], a.get("StateReason") or "no reason given") for a in firing)),
                stopped_at=where, alarms=[dict(name=a["AlarmName"], state_reason=a.get("StateReason"),
                                               updated=_timestamp(a.get("StateUpdatedTimestamp"))) for a in firing])

    def check_room(self, where: str, expected_seconds: float) -> None:
        """A window or a time budget too short for the work after ``where`` stops every run there, in every window:
        an input error, named, rather than a stop each run repeats (a run that scales up and never replaces)."""
        for name, room in (("maintenance_window", self.window.length_seconds() if self.window else None),
                           ("max_duration_seconds", self.budget_seconds)):
            if room is not None and room < expected_seconds:
                raise invalid_parameter(name, "%s leaves %d s, and the work %s may take %d s (the most its timeouts "
                                        "allow until the run has seen a batch: drain_timeout, post_drain_wait, "
                                        "node_ready_timeout, and any soak and health_gate_timeout): no run could "
                                        "go on. Give it more time, or lower those timeouts." % (
                                            name, room, where, expected_seconds))

    def check_time(self, where: str, expected_seconds: float) -> datetime.datetime | None:
        now = self.now()
        verdict = windows.start_verdict(now, expected_seconds, self.window, self.budget_end)
        if verdict.allowed:
            return verdict.deadline
        self.check_room(where, expected_seconds)
        if verdict.stopped_by == windows.OUTSIDE_WINDOW:
            why = "outside the maintenance window (%s)" % self.window.describe()
        elif verdict.stopped_by == windows.WINDOW_CLOSES:
            why = "the work could take %d s and the maintenance window (%s) closes at %s" % (
                expected_seconds, self.window.describe(), utc_now_iso(verdict.deadline))
        else:
            why = "the work could take %d s and the run's max_duration_seconds ends at %s" % (
                expected_seconds, utc_now_iso(verdict.deadline))
        opens = (" The next maintenance window opens at %s (%s %s)." % (
            utc_now_iso(verdict.next_opening), verdict.next_opening.astimezone(self.window.zone).strftime(
                "%a %Y-%m-%d %H:%M"), self.window.zone_name) if verdict.next_opening is not None else "")
        raise UpgradeError(
            MAINTENANCE_WINDOW_CLOSED,
            "Stopped %s: %s.%s The upgrade playbook run again inside a window goes on from where this run stopped."
            % (where, why, opens),
            stopped_at=where, stopped_by=verdict.stopped_by, now=utc_now_iso(now),
            next_window_opens=utc_now_iso(verdict.next_opening) if verdict.next_opening is not None else None)


def _timestamp(value: Any) -> str | None:
    return utc_now_iso(value) if isinstance(value, datetime.datetime) else value
