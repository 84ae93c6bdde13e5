# -*- coding: utf-8 -*-
# Copyright: Contributors to the eksops.nodegroup project
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any
import json

DOCUMENTATION = r"""
---
name: upgrade_summary
short_description: The lines a person reads at the end of a node-group upgrade
version_added: 0.1.0
description:
  - Turns the report of P(eksops.nodegroup.upgrade_report#filter) into the lines role
    C(eksops.nodegroup.nodegroup_upgrade) prints last - the node group and the outcome, what EKS did, the target,
    the nodes and pods, the time per phase, what was restored, and on failure the error, the state of the group
    and how to resume. Lines that have nothing to say are left out.
author:
  - eksops.nodegroup maintainers (@eksops)
positional: report_path, stopped_advice, timeline_path
options:
  _input:
    description: The report.
    type: dict
    required: true
  report_path:
    description: Where the report was written (null when it was not).
    type: str
  stopped_advice:
    description: What to do when the cluster autoscaler stopped the upgrade (status C(stopped)).
    type: str
  timeline_path:
    description: Where the picture of the upgrade was written beside the report (null when it was not).
    type: str
"""

EXAMPLES = r"""
- name: Summary
  ansible.builtin.debug:
    msg: "{{ report | eksops.nodegroup.upgrade_summary(report_path, resume_advice.ClusterAutoscalerActive) }}"
"""

RETURN = r"""
_value:
  description: The lines, in order.
  type: list
  elements: str
  sample:
    - "Node group workers of cluster prod (self_managed, Auto Scaling group workers-asg): SUCCEEDED."
    - "Time per phase: setup 3.2 s, scale_up 95.7 s, upgrade 1020.4 s, scale_down 80.1 s; total 1199.4 s."
"""


def _group_line(report: Mapping[str, Any]) -> str:
    error = report["error"] or {}
    # "not found" only when that is the error (issue 10 item 24: it was said whenever the name was not known).
    asg = report["asg_name"] or (
        "not found" if error.get("code", "") == "ResourceNotFound" and error.get("parameter") in ("nodegroup_name", "asg_name")
        else "unknown: the run stopped before identifying it")
    return "Node group %s of cluster %s (%s, Auto Scaling group %s): %s." % (
        report["nodegroup_name"], report["cluster_name"], report["kind"] or "kind unknown", asg, report["status"].upper())


def _eks_line(eks: Mapping[str, Any] | None, per_old_pod: float | None) -> str | None:
    if not eks or not eks.get("nodegroup"):
        return None
    update, plan = eks.get("eks_update"), eks.get("plan") or {}
    if update:
        line = "EKS update %s: %s" % (update["id"], update["status"])
    elif plan.get("action") == "start":  # check mode (issue 25 item 3): nothing was started
        line = "No EKS update started (check mode); the run would start one: %s" % plan["message"]
    else:
        line = "No EKS update needed: the node group was already on the target"
    line += "; release %s, Kubernetes %s" % (eks["nodegroup"]["release_version"], eks["nodegroup"]["version"])
    progress = eks.get("progress")
    if progress:
        line += "; %s of %s nodes on the launch template version EKS set" % (progress["nodes_updated"], progress["nodes_total"])
    return line + _eks_evictions_words(eks.get("evictions"), per_old_pod) + "."


def _eks_evictions_words(evictions: Mapping[str, Any] | None, per_old_pod: float | None) -> str:
    """Issue 29 item 3: the evictions EKS made, as the cluster showed them."""
    if not evictions:
        return ""
    if not evictions["counted"]:
        return "; EKS's evictions not counted (the cluster could not be watched)"
    return "; %d pod(s) evicted by EKS%s" % (evictions["pods_evicted"], "" if per_old_pod is None
                                             else ", %s per pod on the old nodes" % per_old_pod)


def _target_line(report: Mapping[str, Any]) -> str | None:
    template = report["launch_template"]
    if not template:
        return None
    target = "Target: launch template %s version %s (AMI %s)" % (template["id"], template["version"], template["image_id"])
    if str(template["previous_version"]) == str(template["version"]):
        # use_current_launch_template (SPEC W1), or a group whose reference already was the target
        return target + ", the version the Auto Scaling group already used."
    return target + ", from version %s (AMI %s)." % (template["previous_version"], template["previous_image_id"])


def _nodes_line(report: Mapping[str, Any]) -> str:
    # Before the setup phase resolved it, max_unavailable is null: said so ("max_unavailable ," read as a typo).
    return "Nodes replaced: %d%s (strategy %s, max_unavailable %s%s%s); surplus nodes removed at scale-down: %d%s." % (
        len(report["replaced_instances"]),
        "" if report["nodes_before"] is None else " of %s" % report["nodes_before"],
        report["strategy"], "not resolved" if report["max_unavailable"] is None else report["max_unavailable"],
        "" if report["max_surge"] is None else ", max_surge %s" % report["max_surge"],
        _schedule_part(report), len(report["surplus_removed"]),
        "" if report.get("surplus_nodes_with_pods") is None else " (%d held pods to move)" % report["surplus_nodes_with_pods"])


def _schedule_part(report: Mapping[str, Any]) -> str:
    """Issue 11 item 1: the schedule, its decrements and the batches at risk of a replacement in another AZ."""
    if not report.get("schedule"):
        return ""
    at_risk = report.get("at_risk_batches") or []
    return ", schedule %s, %d decrement(s)%s" % (
        report["schedule"], report.get("decrements") or 0,
        ", batches at risk of a replacement in another AZ: %s" % ", ".join(str(b) for b in at_risk) if at_risk else "")


def _pods_line(report: Mapping[str, Any]) -> str:
    forced = report["pods_deleted_by_force"]
    per_old_pod = report["disruptions_per_old_pod"]
    evicted = "evictions not counted" if report["pods_evicted"] is None else "%d evicted" % report["pods_evicted"]
    return "Pods: %s, %d deleted by force%s, %d removed with a warning%s; time waiting on PodDisruptionBudgets: %s." % (
        evicted, len(forced), " (%s)" % ", ".join(forced) if forced else "", len(report["pod_warnings"]),
        "" if per_old_pod is None else ", %s per pod on the old nodes" % per_old_pod,
        "not reported" if report["pdb_wait_seconds"] is None else "%s s" % report["pdb_wait_seconds"])


def _phase_line(report: Mapping[str, Any]) -> str:
    phases = " s, ".join("%s %s" % item for item in report["phase_seconds"].items())
    return "Time per phase: %s s; total %s s." % (phases, report["total_seconds"])


def _restored_line(restored: Mapping[str, Any] | None) -> str | None:
    if not restored:
        return None
    sizes = restored["sizes"]
    line = "Restored: min/max/desired %s/%s/%s, resumed processes: %s." % (
        sizes["min_size"], sizes["max_size"], sizes["desired_capacity"], ", ".join(restored["resumed_processes"]) or "none")
    kept = restored["kept_sizes"]
    if kept:
        line += " KEPT, changed by someone else during the upgrade: %s." % ", ".join(
            "%s %s (before the upgrade %s, the upgrade set %s)" % (
                change["aws_name"], change["found"], change["before_upgrade"], change["set_by_upgrade"])
            for change in kept)
    return line


def _failed_pod(pod: Mapping[str, Any]) -> str:
    return "%s (%s%s)" % (pod["pod"], pod["reason"], "; PodDisruptionBudget %s" % pod["pdb"] if pod["pdb"] else "")


def _quarantined_line(quarantined: list[Mapping[str, Any]] | None) -> str | None:
    """Issue 27 item 5: the nodes held in quarantine, each with the pods that held it."""
    if not quarantined:
        return None
    return ("Quarantined (cordoned, labelled eksops.nodegroup/quarantined=true, instance kept; a rerun retries them): "
            + "; ".join("node %s (%s): %s" % (entry["node"], entry["instance_id"],
                                              ", ".join(_failed_pod(pod) for pod in entry["pods"]) or "no pod named")
                        for entry in quarantined) + ".")


def _error_lines(error: Mapping[str, Any] | None) -> list[str]:
    if not error:
        return []
    # Issue 27: a run stopped at a safe point as asked or as its time ran out did not fail.
    word = "STOPPED" if error.get("stopped") else "ERROR"
    lines = ['%s %s in phase %s (task "%s"): %s' % (word, error["code"], error["phase"], error["task"], error["msg"])]
    if error.get("failed_pods"):
        lines.append("Pods that could not be removed: " + ", ".join(_failed_pod(pod) for pod in error["failed_pods"]))
    if error.get("group_state"):
        lines.append("State of the group: " + json.dumps(error["group_state"]))
    lines.append("To resume: %s" % error["resume"])
    return lines


def upgrade_summary(report: Mapping[str, Any], report_path: str | None = None, stopped_advice: str | None = None,
                    timeline_path: str | None = None) -> list[str]:
    never_joined = report["never_joined"]
    warnings = report["preflight_warnings"]
    lines = [
        _group_line(report),
        _eks_line(report["eks_update"], report.get("disruptions_per_old_pod")),
        "Instances terminated without a node: %s." % "; ".join(
            "%s %s" % (instance["instance_id"], instance["reason"]) for instance in never_joined) if never_joined else None,
        _target_line(report),
        "Every instance already ran the target: nothing to do, nothing was changed." if report["on_target_already"] else None,
        "Dry run: %s nodes would be replaced in %d batches (plan above); nothing was changed." % (
            report["plan"]["old_count"], len(report["plan"]["batches"])) if report["plan"] else None,
    ]
    # What happened to the nodes and their pods: a self-managed group's run, not a dry run.
    nodes_changed = report["kind"] != "managed" and not report["dry_run"]
    lines.extend([
        _nodes_line(report) if nodes_changed else None,
        _phase_line(report),
        _pods_line(report) if nodes_changed else None,
        "Preflight warnings (printed before the upgrade started): %s" % ", ".join(
            warning["check"] for warning in warnings) if warnings else None,
        _restored_line(report["restored"]),
        _quarantined_line(report.get("quarantined")),
        "STOPPED: the cluster autoscaler changed the desired capacity during the upgrade; nothing was restored. %s"
        % stopped_advice if report["status"] == "stopped" else None,
    ])
    lines.extend(_error_lines(report["error"]))
    lines.append("Report written to %s" % report_path if report_path else None)
    lines.append("Timeline of the upgrade (open it in a browser): %s" % timeline_path if timeline_path else None)
    return [line for line in lines if line]


class FilterModule(object):
    def filters(self) -> dict[str, Callable[..., list[str]]]:
        return {"upgrade_summary": upgrade_summary}
