# -*- coding: utf-8 -*-
# Copyright: Contributors to the eksops.nodegroup project
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""The fleet playbook's verdict on the previous ring after the bake (issue 28 item 2), pure."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from ansible_collections.eksops.nodegroup.plugins.module_utils.errors import API_ERROR, HEALTH_GATE_FAILED


def bake_problem(read: Mapping[str, Any]) -> str:
    """What is wrong with a node group of the previous ring after the bake, from its reading by module
    fleet_ring_health (``name``: its host), or an empty string when it is healthy: every instance in service on the
    target, its node registered, Ready and schedulable."""
    host = read.get("name")
    if read.get("failed") or "nodegroup" not in read:
        return "%s could not be read (%s)" % (host, read.get("msg"))
    group = read["nodegroup"]
    problems = []
    if group["old_instances"]:
        old = group["old_instances"]
        problems.append("%d instance(s) not on the target (%s)" % (len(old), ", ".join(old)))
    for instance in group["instances"]:
        if instance.get("lifecycle_state") != "InService" or not instance.get("node_name") or not instance.get("ready"):
            problems.append("instance %s %s, node %s %s" % (
                instance["instance_id"], instance.get("lifecycle_state"), instance.get("node_name") or "not registered",
                "Ready" if instance.get("ready") else "not Ready"))
        elif instance.get("unschedulable"):
            problems.append("node %s cordoned" % instance["node_name"])
    return "%s: %s" % (host, "; ".join(problems)) if problems else ""


def bake_halt(judgement: Mapping[str, Any], step: Mapping[str, Any]) -> dict[str, Any] | None:
    """Why the bake before ``step`` stops the fleet, or None when the previous ring is healthy: ``{wave, ring, code,
    reason}`` for the fleet's report and the stop. ``judgement``: module fleet_ring_health's result on the previous
    ring (its ``ring``: ``nodegroups``, each judged by bake_problem; ``clusters``, each with its ``health`` or its
    failure), or its failure as a whole (no ``ring``: ``msg``, ``code``). The code is HealthGateFailed when
    something was judged unhealthy, else that of the first read that failed (such as AccessDenied or
    ClusterUnreachable: what could not be judged is not called unhealthy)."""
    problems, codes = [], []
    ring = judgement.get("ring")
    if ring is None:
        problems.append("the ring could not be judged (%s)" % judgement.get("msg"))
        codes.append(judgement.get("code") or API_ERROR)
        ring = {}
    for read in ring.get("nodegroups") or []:
        problem = bake_problem(read)
        if problem:
            problems.append(problem)
            unread = read.get("failed") or "nodegroup" not in read
            codes.append(read.get("code") or API_ERROR if unread else HEALTH_GATE_FAILED)
    for health in ring.get("clusters") or []:
        if "health" not in health:
            problems.append("%s: %s" % (health.get("cluster_name"), health.get("msg") or "not judged"))
            codes.append(health.get("code") or API_ERROR)
    if not problems:
        return None
    return dict(wave=step["wave"], ring=step["ring"], code=HEALTH_GATE_FAILED if HEALTH_GATE_FAILED in codes else codes[0],
                reason="After the bake, ring %s is not healthy or could not be judged: %s. Ring %s and every later "
                       "ring were not started; rerun the job once it is healthy"
                       % (step["bake_ring"], "; ".join(problems), step["ring"]))
