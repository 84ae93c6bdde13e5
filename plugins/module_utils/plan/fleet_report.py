# -*- coding: utf-8 -*-
# Copyright: Contributors to the eksops.nodegroup project
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""The fleet playbook's report (issue 28 item 2), pure: one row per node group of the plan, and the fleet's status."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any


def _row(host: str, ring: str, wave: int, report: Mapping[str, Any] | None, paths: Mapping[str, Any]) -> dict[str, Any]:
    error = (report or {}).get("error") or {}
    return dict(host=host, ring=ring, wave=wave,
                cluster_name=(report or {}).get("cluster_name"), nodegroup_name=(report or {}).get("nodegroup_name"),
                status=report["status"] if report else "not_started",
                started_at=(report or {}).get("started_at"), finished_at=(report or {}).get("finished_at"),
                total_seconds=(report or {}).get("total_seconds"), phase_seconds=(report or {}).get("phase_seconds"),
                pods_evicted=(report or {}).get("pods_evicted"),
                error_code=error.get("code"), error=error.get("summary") or error.get("msg"),
                report_path=paths.get("report_path"), timeline_path=paths.get("timeline_path"))


def _waves(plan: Mapping[str, Any], rows: list[dict[str, Any]], ran: int, max_fail_percentage: int,
           dry_run: bool) -> list[dict[str, Any]]:
    """Each step that ran (its wave <= ``ran``): ``{wave, ring, size, failed, stops}``, ``failed`` its node groups
    that did not end on target (a row not started in a wave that ran too: its host failed or was unreachable), and
    ``stops`` whether they exceed ``max_fail_percentage`` of the wave, as Ansible's linear strategy judges a serial
    batch (failed hosts / batch size > max_fail_percentage / 100), so that no later wave starts. A dry run's waves
    stop nothing: they all ran in one batch (the playbook's serial in check mode)."""
    waves = []
    for step in plan["steps"][:ran]:
        failed = [row["host"] for row in rows if row["wave"] == step["wave"] and row["status"] not in ("succeeded", "planned")]
        waves.append(dict(wave=step["wave"], ring=step["ring"], size=len(step["hosts"]), failed=failed,
                          stops=not dry_run and len(failed) / len(step["hosts"]) > max_fail_percentage / 100.0))
    return waves


def _status(plan: Mapping[str, Any], rows: list[dict[str, Any]], ran: int, halt: Mapping[str, Any] | None) -> str:
    """halted (a stop before the last wave), failed (the last wave stopped, or failures within the tolerance),
    running (waves left), planned (a dry run), partial (node groups of the inventory left out), succeeded."""
    last = len(plan["steps"])
    if halt is not None:
        return "failed" if halt["wave"] == last and halt["code"] == "FleetWaveFailed" else "halted"
    if ran < last:
        return "running"
    if any(row["status"] not in ("succeeded", "planned") for row in rows if row["wave"] is not None):
        return "failed"
    if any(row["status"] == "planned" for row in rows):
        return "planned"
    return "partial" if any(row["status"] == "left_out" for row in rows) else "succeeded"


def fleet_report(plan: Mapping[str, Any], reports: Mapping[str, Mapping[str, Any] | None],
                 paths: Mapping[str, Mapping[str, Any]], ran: int, max_fail_percentage: int,
                 left_out: Mapping[str, Mapping[str, Any]] | None = None,
                 bake_halt: Mapping[str, Any] | None = None, dry_run: bool = False) -> dict[str, Any]:
    """The fleet's report once the waves up to ``ran`` have ended (those before it only with ``bake_halt``: its
    wave never started). One row per node group of the plan, in its order - its wrapper report's outcome
    (``reports``: by host, None for a host whose step never ran), durations, pods moved and error code, and where
    its JSON report and timeline picture are (``paths``: by host) - then a row ``left_out`` for each node group of
    the inventory not in the play (``left_out``: by host, its report fields; a rerun's --limit leaves them out);
    ``waves``, each wave that ran (_waves); ``halt``, why the fleet stops: the first wave whose failures exceed
    ``max_fail_percentage`` (code FleetWaveFailed), else ``bake_halt`` (``{wave, ring, code, reason}``), else
    null; ``halted_at`` (the halt's wave, ring and failed hosts); ``status`` (_status) and counts by row status.
    ``dry_run``: every wave's dry run ran at once, so every wave counts as run and none halts the others."""
    ran = len(plan["steps"]) if dry_run else ran - 1 if bake_halt else ran
    rows = [_row(host, step["ring"], step["wave"], reports.get(host), paths.get(host) or {})
            for step in plan["steps"] for host in step["hosts"]]
    rows.extend(dict(_row(host, None, None, None, {}), status="left_out", **dict(report))
                for host, report in sorted((left_out or {}).items()))
    waves = _waves(plan, rows, ran, max_fail_percentage, dry_run)
    stopped = next((wave for wave in waves if wave["stops"]), None)
    halt = bake_halt
    if stopped is not None:
        halt = dict(wave=stopped["wave"], ring=stopped["ring"], code="FleetWaveFailed", reason=(
            "%d of the %d node group(s) of wave %d did not end on target (%s), more than fleet_max_fail_percentage "
            "%d%%" % (len(stopped["failed"]), stopped["size"], stopped["wave"], ", ".join(stopped["failed"]),
                      max_fail_percentage)))
    counts: dict[str, int] = {}
    for row in rows:
        counts[row["status"]] = counts.get(row["status"], 0) + 1
    return dict(status=_status(plan, rows, ran, halt), dry_run=dry_run, counts=counts, rows=rows, waves=waves,
                max_fail_percentage=max_fail_percentage, halt=halt,
                halted_at=None if halt is None else dict(wave=halt["wave"], ring=halt["ring"],
                                                         failed=stopped["failed"] if stopped else []))


def stop_message(report: Mapping[str, Any], host: str) -> str:
    """FleetWaveFailed's message for ``host``, a node group that did not end on target: what it ended as, and
    whether its wave's failures stop the later waves (more than the report's max_fail_percentage) or not."""
    row = next(row for row in report["rows"] if row["host"] == host)
    wave = next(wave for wave in report["waves"] if wave["wave"] == row["wave"])
    ended = "%s%s" % (row["status"], " (%s)" % row["error_code"] if row["error_code"] else "")
    if report.get("dry_run"):
        return ("Node group %s (wave %d, ring %s): its dry run ended %s; the run would stop there and hold back the "
                "later waves: correct it, or leave it out with --limit, before the run (docs/fleet.md)."
                % (host, row["wave"], row["ring"], ended))
    share = "%d of the %d node group(s) of wave %d did not end on target" % (
        len(wave["failed"]), wave["size"], wave["wave"])
    if not any(later["wave"] is not None and later["wave"] > wave["wave"] for later in report["rows"]):
        after = ("it was the fleet's last wave; rerun the job to resume the node groups that did not end on target "
                 "(docs/fleet.md)")
    elif wave["stops"]:
        after = ("more than fleet_max_fail_percentage %d%%: the later waves do not start; rerun the job to resume "
                 "the fleet (docs/fleet.md)" % report["max_fail_percentage"])
    else:
        after = ("within fleet_max_fail_percentage %d%%: the later waves go on; rerun the job afterwards to resume "
                 "this node group (docs/fleet.md)" % report["max_fail_percentage"])
    return "Node group %s (wave %d, ring %s) ended %s. %s, %s." % (host, row["wave"], row["ring"], ended, share, after)
