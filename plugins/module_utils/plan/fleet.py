# -*- coding: utf-8 -*-
# Copyright: Contributors to the eksops.nodegroup project
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""The fleet playbook's plan (issue 28 item 2), pure: which node group goes in which wave (the report:
plan/fleet_report.py; the bake's verdict: plan/fleet_bake_verdict.py).

Ansible runs the waves: the plan orders the hosts and sizes the play's ``serial`` batches, so that each batch (a
*step*) holds node groups of one ring only, and of each cluster at most ``per_cluster_concurrency``, in the
cluster's declared order (``first_nodegroups``, shell patterns of node group names, then the others by name). The
rings go in ``fleet_rings`` order; a step never mixes a cluster's node groups of two patterns of
``first_nodegroups``, so that the pattern before is a barrier whatever the concurrency; the first step of each
ring after the first is baked before (``bake_nodegroups``: the previous ring's node groups). ``max_fail_percentage`` on the
play then stops every later step when one fails.
"""

from __future__ import annotations

import fnmatch
from collections.abc import Mapping, Sequence
from typing import Any

from ansible_collections.eksops.nodegroup.plugins.module_utils.errors import invalid_parameter

# What a host of the fleet must carry: the eks_nodegroups inventory's host variables (docs/inventory.md).
HOST_VARIABLES = ("cluster_name", "nodegroup_name", "aws_region")


def _cluster_key(host: Mapping[str, Any]) -> str:
    """A cluster by its ARN (unique across accounts and regions) when the inventory gives it."""
    return host.get("cluster_arn") or "%s/%s" % (host["aws_region"], host["cluster_name"])


def _order_key(name: str, first: Sequence[str]) -> tuple[int, str]:
    """A node group's place in its cluster: the index of the first pattern of ``first`` its name matches (the
    others after them), then its name."""
    for index, pattern in enumerate(first):
        if fnmatch.fnmatchcase(name, pattern):
            return index, name
    return len(first), name


def context(host: Mapping[str, Any], environment_kubeconfig: bool) -> str | None:
    """The kubeconfig context through which a node group's runs reach its cluster: its host variable kube_context,
    else, with a kubeconfig (its host variable kubeconfig, or the environment's KUBECONFIG), the cluster's ARN (the
    context `aws eks update-kubeconfig` names), else none (a kubeconfig's current context, or without one an EKS
    token for cluster_name)."""
    uses_kubeconfig = host.get("kubeconfig") or environment_kubeconfig
    return host.get("kube_context") or (host.get("cluster_arn") if uses_kubeconfig else None) or None


def _where(host: Mapping[str, Any], kube_context: str | None) -> dict[str, Any]:
    """Where a node group's cluster is reached, as module fleet_ring_health takes it: its region, profile,
    kubeconfig and context (``kube_context``: the plan's, context())."""
    return dict(region=host["aws_region"], profile=host.get("aws_profile"), kubeconfig=host.get("kubeconfig") or None,
                context=kube_context)


def _bake_nodegroups(hosts: Mapping[str, Mapping[str, Any]], names: Sequence[str], contexts: Mapping[str, Any]
                     ) -> list[dict[str, Any]]:
    """The node groups of ``names`` as module fleet_ring_health takes them: ``{name, cluster_name, nodegroup_name,
    asg_name, region, profile, kubeconfig, context}``."""
    return [dict(_where(hosts[name], contexts[name]), name=name, cluster_name=hosts[name]["cluster_name"],
                 nodegroup_name=hosts[name]["nodegroup_name"], asg_name=hosts[name].get("asg_name")) for name in names]


def _bake_clusters(hosts: Mapping[str, Mapping[str, Any]], names: Sequence[str], contexts: Mapping[str, Any]
                   ) -> list[dict[str, Any]]:
    """The clusters of ``names``, once each, in their order, as module fleet_ring_health takes them:
    ``{cluster_name, region, profile, kubeconfig, context}`` (``context``: its hosts', which check_fleet saw agree;
    the rest its first node group's)."""
    clusters: dict[str, dict[str, Any]] = {}
    for name in names:
        if _cluster_key(hosts[name]) not in clusters:
            clusters[_cluster_key(hosts[name])] = dict(_where(hosts[name], contexts[name]),
                                                       cluster_name=hosts[name]["cluster_name"])
    return list(clusters.values())


def concurrency(value: Any) -> int:
    """``per_cluster_concurrency`` as a whole number >= 1 (the extra variable may be a string), or refused."""
    if isinstance(value, bool) or not str(value).isdigit() or int(value) < 1:
        raise invalid_parameter("per_cluster_concurrency", "per_cluster_concurrency must be a whole number >= 1, "
                                "got %s" % (value,))
    return int(value)


def check_fleet(hosts: Mapping[str, Mapping[str, Any]], rings: Sequence[str]) -> None:
    """Refuse, naming the parameter, what cannot be planned: no ring, a host that is no node group of the
    inventory, two hosts of one node group, hosts of one cluster naming different kubeconfig contexts (the bake
    judges a cluster through one), or a host whose ring is not in ``rings``."""
    if not rings or len(set(rings)) != len(rings):
        raise invalid_parameter("fleet_rings", "fleet_rings must list the rings in the order they go, each once, got "
                                "%r" % (list(rings),))
    missing = sorted(name for name, host in hosts.items() if any(not host.get(key) for key in HOST_VARIABLES))
    if missing:
        raise invalid_parameter("hosts", "host(s) %s lack %s: the fleet's hosts are the node groups of the "
                                "eksops.nodegroup.eks_nodegroups inventory (or give them these host variables); "
                                "leave others out with --limit" % (", ".join(missing), ", ".join(HOST_VARIABLES)))
    named: dict[tuple[str, str], list[str]] = {}
    for name in sorted(hosts):
        named.setdefault((_cluster_key(hosts[name]), hosts[name]["nodegroup_name"]), []).append(name)
    twice = ["%s (%s)" % (" and ".join(names), key[1]) for key, names in sorted(named.items()) if len(names) > 1]
    if twice:
        raise invalid_parameter("nodegroup_name", "host(s) %s name one node group: each host must be its own node "
                                "group (an extra variable cluster_name or nodegroup_name applies to every host; give "
                                "neither to the fleet)" % "; ".join(twice))
    _check_contexts(hosts)
    outside = sorted("%s (%s)" % (name, host.get("ring")) for name, host in hosts.items() if host.get("ring") not in rings)
    if outside:
        raise invalid_parameter("fleet_rings", "node group(s) %s are in no ring of fleet_rings %s (their ring: host "
                                "variable upgrade_ring, else the tag upgrade-ring): tag them, add their ring to "
                                "fleet_rings, or leave them out with --limit" % (", ".join(outside), list(rings)))


def check_slice(hosts: Mapping[str, Mapping[str, Any]], inventory: Sequence[str], rings: Sequence[str],
                per_cluster_concurrency: int) -> None:
    """Refuse a job whose inventory is one slice of AWX's job slicing when the slices would break the fleet's
    bounds. AWX deals the inventory's hosts, sorted by name, to ``job_slice_count`` jobs that run at once
    (awx/main/models/inventory.py, ``get_sliced_hosts``: ``hosts[slice_number - 1::slice_count]``), so the node
    groups of one cluster, whose names sort together, land in different jobs. A job sees it by the node groups of
    its clusters (``cluster_nodegroups``, which the eks_nodegroups inventory lists) missing from its ``inventory``.
    Then every job would run up to ``per_cluster_concurrency`` of a cluster's node groups, so it must cover them
    all; and each job would order only its own rings, so it must hold one ring."""
    split: dict[str, tuple[str, list[str]]] = {}
    for host in hosts.values():
        listed = list(host.get("cluster_nodegroups") or [])
        if set(listed) - set(inventory):
            split[_cluster_key(host)] = (host["cluster_name"], listed)
    if not split:
        return
    crowded = sorted("%s (%d node groups: %s)" % (name, len(listed), ", ".join(listed))
                     for name, listed in split.values() if len(listed) > per_cluster_concurrency)
    if crowded:
        raise invalid_parameter("per_cluster_concurrency", "this job's inventory is a slice of the fleet: it lacks "
                                "node groups of cluster(s) %s, which AWX's job slicing deals to jobs that run at once, "
                                "so more than per_cluster_concurrency %d of them would be upgraded at once, and not in "
                                "first_nodegroups order: run the job unsliced (job_slice_count 1), or raise "
                                "per_cluster_concurrency to the cluster's node groups when they share no workloads"
                                % ("; ".join(crowded), per_cluster_concurrency))
    held = [ring for ring in rings if any(host.get("ring") == ring for host in hosts.values())]
    if len(held) > 1:
        raise invalid_parameter("fleet_rings", "this job's inventory is a slice of the fleet (it lacks node groups "
                                "of cluster(s) %s) and holds the rings %s: each slice would order its own rings only, "
                                "so a failure in one slice's %s ring would not hold back the other slices' later "
                                "rings; slice a job of one ring (its limit, such as ring_%s)"
                                % (", ".join(sorted(name for name, _listed in split.values())), held, held[0],
                                   held[-1]))


def _check_contexts(hosts: Mapping[str, Mapping[str, Any]]) -> None:
    """The hosts of one cluster name one kubeconfig context (host variable kube_context), or none."""
    contexts: dict[str, dict[str, list[str]]] = {}
    for name in sorted(hosts):
        contexts.setdefault(_cluster_key(hosts[name]), {}).setdefault(hosts[name].get("kube_context") or "", []).append(name)
    differ = ["cluster %s: %s" % (key, "; ".join("%s (%s)" % (", ".join(names), context or "none")
                                                 for context, names in sorted(by_context.items())))
              for key, by_context in sorted(contexts.items()) if len(by_context) > 1]
    if differ:
        raise invalid_parameter("kube_context", "the node groups of one cluster name different kube_context (%s): the "
                                "bake between rings judges each cluster's workloads through one context; give them "
                                "one" % "; ".join(differ))


def _chunks(names: Sequence[str], patterns: Sequence[int], size: int) -> list[list[str]]:
    """A cluster's node groups (in order; ``patterns``: the index of the pattern of ``first_nodegroups`` each
    matches) cut into the steps they go in: at most ``size`` each, and a new step where the pattern changes, so that
    a pattern's groups have all ended before the next pattern's start (issue 28 item 2 review, finding 7)."""
    chunks: list[list[str]] = []
    for position, name in enumerate(names):
        if not chunks or patterns[position] != patterns[position - 1] or len(chunks[-1]) == size:
            chunks.append([])
        chunks[-1].append(name)
    return chunks


def fleet_plan(hosts: Mapping[str, Mapping[str, Any]], rings: Sequence[str], first: Sequence[str],
               per_cluster_concurrency: Any, inventory: Sequence[str] | None = None,
               environment_kubeconfig: bool = False) -> dict[str, Any]:
    """The waves: ``{hosts, serial, steps, contexts, summary}``; ``hosts`` in the order the play takes them,
    ``serial`` the size of each step, ``steps`` each ``{wave, ring, hosts, bake_ring, bake_nodegroups,
    bake_clusters}`` (``wave``: its number, from 1; ``bake_nodegroups``: the previous ring's node groups, on a
    ring's first step after the first ring, else empty; ``bake_ring``: their ring; ``bake_clusters``: their
    clusters), ``contexts`` each host's kubeconfig context (context(); ``environment_kubeconfig``: whether the
    environment names a kubeconfig, KUBECONFIG). ``hosts`` maps each host to ``ring``, ``cluster_name``,
    ``nodegroup_name``, ``aws_region`` (``asg_name``, ``cluster_arn``, ``cluster_nodegroups``, ``kube_context``,
    ``kubeconfig``, ``aws_profile`` optional).
    check_fleet refuses first, then check_slice when the job's ``inventory`` (every host name) is given."""
    size = concurrency(per_cluster_concurrency)
    check_fleet(hosts, rings)
    if inventory is not None:
        check_slice(hosts, inventory, rings, size)
    contexts = dict((name, context(host, environment_kubeconfig)) for name, host in hosts.items())
    steps: list[dict[str, Any]] = []
    previous: list[str] = []
    previous_ring = None
    for ring in rings:
        clusters: dict[str, list[str]] = {}
        for name in sorted(hosts):
            if hosts[name]["ring"] == ring:
                clusters.setdefault(_cluster_key(hosts[name]), []).append(name)
        chunks = {}
        for key, names in clusters.items():
            names.sort(key=lambda name: _order_key(hosts[name]["nodegroup_name"], first))
            chunks[key] = _chunks(names, [_order_key(hosts[name]["nodegroup_name"], first)[0] for name in names], size)
        ring_hosts: list[str] = []
        for index in range(max((len(cut) for cut in chunks.values()), default=0)):
            step = [name for key in sorted(chunks) if index < len(chunks[key]) for name in chunks[key][index]]
            bake = previous if not ring_hosts else []
            steps.append(dict(wave=len(steps) + 1, ring=ring, hosts=step, bake_ring=previous_ring if bake else None,
                              bake_nodegroups=_bake_nodegroups(hosts, bake, contexts),
                              bake_clusters=_bake_clusters(hosts, bake, contexts)))
            ring_hosts.extend(step)
        if ring_hosts:
            previous, previous_ring = ring_hosts, ring
    return dict(hosts=[name for step in steps for name in step["hosts"]],
                serial=[len(step["hosts"]) for step in steps], steps=steps, contexts=contexts, summary=summary(steps))


def summary(steps: Sequence[Mapping[str, Any]]) -> str:
    """The waves in one line, for the plan play to print: ``wave 3 (ring1, after the bake of ring canary): a, b``."""
    return "; ".join("wave %d (%s%s): %s" % (
        step["wave"], step["ring"], ", after the bake of ring %s" % step["bake_ring"] if step["bake_ring"] else "",
        ", ".join(step["hosts"])) for step in steps)
