# -*- coding: utf-8 -*-
# Copyright: Contributors to the eksops.nodegroup project
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from typing import Any

from ansible_collections.eksops.nodegroup.plugins.module_utils.errors import UpgradeError, invalid_parameter
from ansible_collections.eksops.nodegroup.plugins.module_utils.managed.target import kubernetes_minor
from ansible_collections.eksops.nodegroup.plugins.module_utils.plan.fleet import HOST_VARIABLES, fleet_plan as plan_fleet

DOCUMENTATION = r"""
---
name: fleet_plan
short_description: The waves of a fleet upgrade - its hosts in order and the play's serial batches
version_added: 0.1.0
description:
  - C(playbooks/upgrade_fleet.yml) (issue 28 item 2) runs its waves as Ansible's C(serial) batches of one play.
    This filter orders the fleet's hosts and sizes the batches, each a I(step) of one ring holding at most
    O(per_cluster_concurrency) node groups of each cluster, the cluster's groups in the order O(first_nodegroups)
    declares (module_utils/plan/fleet.py).
  - A host's ring is its host variable C(upgrade_ring), else its node group's tag C(upgrade-ring)
    (C(nodegroup_tags), from the C(eksops.nodegroup.eks_nodegroups) inventory).
author:
  - eksops.nodegroup maintainers (@eksops)
options:
  _input:
    description:
      - The fleet's host names (C(ansible_play_hosts_all)).
    type: list
    elements: str
    required: true
  hostvars:
    description:
      - C(hostvars).
    type: dict
    required: true
  rings:
    description:
      - The rings, in the order they go.
    type: list
    elements: str
    required: true
  first_nodegroups:
    description:
      - Shell patterns of node group names that go first in their cluster, in this order.
    type: list
    elements: str
    required: true
  per_cluster_concurrency:
    description:
      - How many node groups of one cluster upgrade at once, a whole number >= 1.
    type: raw
    required: true
  kubernetes_version:
    description:
      - The fleet's target; a node group whose cluster's control plane (host variable C(cluster_version)) is older
        is refused (SPEC K6), naming it.
    type: str
  inventory:
    description:
      - Every host of the job's inventory (C(groups.all)). Given, a job that AWX's job slicing handed only some node
        groups of a cluster (C(cluster_nodegroups), from the C(eksops.nodegroup.eks_nodegroups) inventory) is refused
        when its slices would break O(per_cluster_concurrency) or the order of the rings (docs/awx.md, I(Job
        slicing)).
    type: list
    elements: str
  environment_kubeconfig:
    description:
      - The environment's C(KUBECONFIG). With it, or with its own variable C(kubeconfig), a host without
        C(kube_context) reaches its cluster through the context named by its C(cluster_arn), as
        C(aws eks update-kubeconfig) names it.
    type: raw
"""

EXAMPLES = r"""
- name: Plan the waves
  ansible.builtin.set_fact:
    fleet_plan: >-
      {{ ansible_play_hosts_all | eksops.nodegroup.fleet_plan(hostvars, ['canary', 'ring1'], ['system*'], 1,
         kubernetes_version, groups['all'], lookup('ansible.builtin.env', 'KUBECONFIG')) }}
  run_once: true
"""

RETURN = r"""
_value:
  description:
    - C(hosts) in the order of the waves, C(serial) the size of each step, C(steps) each C({wave, ring,
      hosts, bake_ring, bake_nodegroups, bake_clusters}) (C(wave) - its number, from 1; C(bake_nodegroups) - the
      previous ring's node groups on a ring's first step, else empty, each C({name, cluster_name, nodegroup_name,
      asg_name, region, profile, kubeconfig, context}); C(bake_clusters) - their clusters, each C({cluster_name,
      region, profile, kubeconfig, context}), as module M(eksops.nodegroup.fleet_ring_health) takes them; C(bake_ring) - their ring),
      C(contexts) (by host, the kubeconfig context its runs use - C(kube_context), else with a kubeconfig (its
      C(kubeconfig), or O(environment_kubeconfig)) the cluster's C(cluster_arn) - or null), C(regions) (by region, the node groups as
      module C(eksops.nodegroup.fleet_targets) takes them), C(region_profiles) (by region, the C(aws_profile) that
      reads its SSM parameters - its first node group's - or null), C(accounts) (by credentials, each C({profile, region,
      nodegroups}) as module C(eksops.nodegroup.fleet_accounts) takes them - the hosts with an C(aws_account_id)),
      and C(error)
      (null, or C({parameter, msg}) when the fleet cannot be planned; nothing else is set then).
  type: dict
"""


def _ring(variables: Mapping[str, Any]) -> Any:
    if variables.get("upgrade_ring"):
        return variables["upgrade_ring"]
    return (variables.get("nodegroup_tags") or {}).get("upgrade-ring")


def check_control_planes(hosts: Sequence[str], hostvars: Mapping[str, Any], kubernetes_version: Any) -> None:
    """SPEC K6 for the whole fleet before its first wave: refuse the node groups whose cluster's control plane (the
    inventory's C(cluster_version)) is older than the target, naming them."""
    wanted = kubernetes_minor(str(kubernetes_version))
    behind = ["%s (%s)" % (name, hostvars[name]["cluster_version"]) for name in hosts
              if wanted and kubernetes_minor(hostvars[name].get("cluster_version")) is not None
              and kubernetes_minor(hostvars[name]["cluster_version"]) < wanted]
    if behind:
        raise invalid_parameter("kubernetes_version", "kubernetes_version %s is newer than the control plane of the "
                                "cluster(s) of %s (nodes may not run a newer Kubernetes than their control plane): "
                                "upgrade those clusters first, or leave them out with --limit"
                                % (kubernetes_version, ", ".join(behind)))


def _accounts(hosts: Sequence[str], hostvars: Mapping[str, Any]) -> list[dict[str, Any]]:
    """The hosts whose account the inventory tells, by the credentials their runs use (host variable aws_profile;
    none: the controller's), for one GetCallerIdentity per set."""
    accounts: dict[Any, dict[str, Any]] = {}
    for name in hosts:
        variables = hostvars[name]
        if variables.get("aws_account_id"):
            profile = variables.get("aws_profile") or None
            accounts.setdefault(profile, dict(profile=profile, region=variables.get("aws_region"), nodegroups=[]))
            accounts[profile]["nodegroups"].append(dict(host=name, aws_account_id=str(variables["aws_account_id"])))
    return list(accounts.values())


def fleet_plan(hosts: Sequence[str], hostvars: Mapping[str, Any], rings: Sequence[str], first_nodegroups: Sequence[str],
               per_cluster_concurrency: Any, kubernetes_version: Any = None,
               inventory: Sequence[str] | None = None, environment_kubeconfig: Any = None) -> dict[str, Any]:
    fleet = {}
    regions: dict[str, list[dict[str, Any]]] = {}
    # The credentials that read a region's SSM parameters: its first node group's (aws_profile; none: the
    # controller's). The public parameters are the same in every account of a region.
    region_profiles: dict[str, Any] = {}
    for name in hosts:
        variables = hostvars[name]
        fleet[name] = dict((key, variables.get(key)) for key in HOST_VARIABLES + (
            "asg_name", "cluster_arn", "cluster_nodegroups", "kube_context", "kubeconfig", "aws_profile"))
        fleet[name]["ring"] = _ring(variables)
        regions.setdefault(variables.get("aws_region"), []).append(dict(
            host=name, kind=variables.get("kind"), nodegroup_image_name=variables.get("nodegroup_image_name"),
            nodegroup_ami_type=variables.get("nodegroup_ami_type")))
        region_profiles.setdefault(variables.get("aws_region"), variables.get("aws_profile") or None)
    try:
        plan = plan_fleet(fleet, list(rings), list(first_nodegroups), per_cluster_concurrency,
                          None if inventory is None else list(inventory), bool(environment_kubeconfig))
        check_control_planes(list(hosts), hostvars, kubernetes_version)
    except UpgradeError as err:
        return dict(error=dict(parameter=err.details.get("parameter"), msg=err.msg))
    return dict(plan, regions=regions, region_profiles=region_profiles, accounts=_accounts(hosts, hostvars), error=None)


class FilterModule(object):
    def filters(self) -> dict[str, Callable[..., Any]]:
        return {"fleet_plan": fleet_plan}
