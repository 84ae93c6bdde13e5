# -*- coding: utf-8 -*-
# Copyright: Contributors to the eksops.nodegroup project
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""The drain step: node_drain's work (state cordon, drain or uncordon) for a module or the node_replace action.

``module`` is anything with the EksopsModule surface these functions use: ``params`` (node_drain's options),
``check_mode``, ``_diff``, ``aws(service)``, ``core_v1()``, ``warn``, ``log``, ``with_diff`` and
``fail_upgrade(err, **result)`` (which does not return).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any
from ansible_collections.eksops.nodegroup.plugins.module_utils.drain import (
    DEFAULT_OPTIONS, DrainOptions, cordon_nodes, drain_nodes, read_nodes, uncordon_nodes)
from ansible_collections.eksops.nodegroup.plugins.module_utils.members.instances import instance_id_of
from ansible_collections.eksops.nodegroup.plugins.module_utils.nodegroup.lease import LEASE_OPTION, claim
from ansible_collections.eksops.nodegroup.plugins.module_utils.nodegroup.load_balancers import (
    ClusterLoadBalancers,
    find_cluster_load_balancers,
)
from ansible_collections.eksops.nodegroup.plugins.module_utils.members.node_scope import check_nodes_in_nodegroup
from ansible_collections.eksops.nodegroup.plugins.module_utils.nodegroup.discovery import NodegroupRef, find_module_nodegroup
from ansible_collections.eksops.nodegroup.plugins.module_utils.drain import resolve_instance_nodes

# The defaults are the drain engine's (DEFAULT_OPTIONS), under kubernetes.core's k8s_drain names.
DELETE_OPTIONS_SPEC = dict(
    terminate_grace_period=dict(type="int", default=DEFAULT_OPTIONS["grace_period"], aliases=["grace_period"]),
    force=dict(type="bool", default=DEFAULT_OPTIONS["force"]),
    ignore_daemonsets=dict(type="bool", default=DEFAULT_OPTIONS["ignore_daemonsets"]),
    delete_emptydir_data=dict(type="bool", default=DEFAULT_OPTIONS["delete_emptydir_data"]),
    disable_eviction=dict(type="bool", default=DEFAULT_OPTIONS["disable_eviction"]),
    wait_timeout=dict(type="int", default=DEFAULT_OPTIONS["drain_timeout"], aliases=["drain_timeout"]),
    skip_wait_for_delete_timeout=dict(type="int", default=DEFAULT_OPTIONS["skip_wait_for_delete_timeout"]),
)

ARGUMENT_SPEC = dict(
    name=dict(type="str"),
    names=dict(type="list", elements="str"),
    instance_ids=dict(type="list", elements="str"),
    nodegroup_name=dict(type="str"),
    asg_name=dict(type="str"),
    state=dict(type="str", choices=["cordon", "drain", "uncordon"], default="drain"),
    delete_options=dict(type="dict", default={}, options=DELETE_OPTIONS_SPEC),
    pod_selectors=dict(type="list", elements="str", aliases=["label_selectors"]),
    exclude_from_load_balancers=dict(type="bool", default=DEFAULT_OPTIONS["exclude_from_load_balancers"]),
    post_drain_wait=dict(type="int", default=DEFAULT_OPTIONS["post_drain_wait"]),
    post_drain_min_wait=dict(type="int"),
    ignore_load_balancer_timeout=dict(type="bool", default=DEFAULT_OPTIONS["ignore_load_balancer_timeout"]),
    eviction_concurrency=dict(type="int", default=DEFAULT_OPTIONS["eviction_concurrency"]),
    run_id=dict(type="str"),
    cluster_name=dict(type="str"),
    **LEASE_OPTION
)


def engine_options(params: dict[str, Any], check_mode: bool) -> DrainOptions:
    """The engine's options (SPEC names) from the module's (kubernetes.core names)."""
    delete = params["delete_options"] or {}
    return DrainOptions(
        drain_timeout=delete.get("wait_timeout"),
        grace_period=delete.get("terminate_grace_period"),
        force=delete.get("force"),
        ignore_daemonsets=delete.get("ignore_daemonsets"),
        delete_emptydir_data=delete.get("delete_emptydir_data"),
        disable_eviction=delete.get("disable_eviction"),
        skip_wait_for_delete_timeout=delete.get("skip_wait_for_delete_timeout"),
        pod_selectors=params["pod_selectors"],
        exclude_from_load_balancers=params["exclude_from_load_balancers"],
        post_drain_wait=params["post_drain_wait"],
        post_drain_min_wait=params["post_drain_min_wait"],
        ignore_load_balancer_timeout=params["ignore_load_balancer_timeout"],
        eviction_concurrency=params["eviction_concurrency"],
        run_id=params["run_id"],
        check_mode=check_mode,
    )


ACTIONS = dict(drain="cordon or drain", cordon="cordon", uncordon="uncordon")


class PreparedDrain:
    """What a drain of node_replace's loop is given instead of reading it (issue 11 item 4): ``group``, the node
    group as the previous batch's termination read it; ``instances``, the batch's node names by instance id (the
    planner's join, SPEC K2); ``balancers``, the cluster's load balancers as find_load_balancers found them during
    the previous batch's post-drain wait."""

    def __init__(self, group: NodegroupRef, instances: Mapping[str, str], balancers: ClusterLoadBalancers | None) -> None:
        self.group = group
        self.instances = dict(instances)
        self.balancers = balancers


def find_load_balancers(module: Any, asg: dict[str, Any] | None) -> ClusterLoadBalancers | None:
    """The cluster's load balancers (B3), looked for when the nodes get the label that makes their controllers let
    them go, and a cluster name to find them by; those attached to ``asg``, the node group's Auto Scaling group, are
    left to Auto Scaling. None: the post-drain wait is fixed."""
    options = module.params
    if options["cluster_name"] and options["exclude_from_load_balancers"] and not module.check_mode:
        return find_cluster_load_balancers(module.aws, options["cluster_name"], module.warn, asg)
    return None


def target_nodes(module: Any, core_v1: Any, group: NodegroupRef | None, prepared: PreparedDrain | None
                 ) -> tuple[list[str], dict[str, str | None] | None, int]:
    """(the names of the nodes the options name, their instances' {instance id: node name or None} when named by
    instance, the requests made): with a node group, refused unless they are its nodes."""
    params = module.params
    action = ACTIONS[params["state"]]
    if params["instance_ids"] is None:
        names = [params["name"]] if params["name"] else params["names"]
        requests = 0
        if group is not None:
            nodes, requests = read_nodes(core_v1, names)
            check_nodes_in_nodegroup(group, dict((name, instance_id_of(node)) for name, node in nodes.items()),
                                     module.aws, "name" if params["name"] else "names", action,
                                     node_labels=dict((name, (node.get("metadata") or {}).get("labels"))
                                                      for name, node in nodes.items()))
        return names, None, requests
    if prepared is not None:
        instances, requests = dict((i, prepared.instances[i]) for i in params["instance_ids"]), 0
    else:
        instances, requests = resolve_instance_nodes(core_v1, params["instance_ids"],
                                                     group.node_selector if group else None)
    for instance_id, node_name in sorted(instances.items()):
        if node_name is None:
            module.log("instance %s has no node: nothing to %s" % (instance_id, params["state"]))
    if group is not None:
        # nodegroup_name is a scope: only the group's nodes are touched (issue 10 item 24).
        check_nodes_in_nodegroup(group, dict((name, instance_id) for instance_id, name in instances.items() if name),
                                 module.aws, "instance_ids", action)
    return sorted(set(name for name in instances.values() if name)), instances, requests


def run(module: Any, prepared: PreparedDrain | None = None, on_emptied: Callable[[], None] | None = None,
        node_warnings: bool = True) -> dict[str, Any]:
    """node_drain's work; ``prepared`` and ``on_emptied`` are node_replace's (see PreparedDrain, drain_nodes), which
    prints the nodes' warnings with their batch (``node_warnings`` false: they are only in the result)."""
    params = module.params
    # Every option, pod_selectors too, is checked before the first request: a selector the API server refuses
    # used to be found only by the first pod LIST, after the nodes were cordoned (issue 10 item 24).
    options = engine_options(params, module.check_mode)
    core_v1 = module.core_v1()
    group = None
    if prepared is not None:
        group = prepared.group
    elif params["nodegroup_name"]:
        group = find_module_nodegroup(module)
    names, instances, requests_before = target_nodes(module, core_v1, group, prepared)
    if instances is not None and not names:
        return dict(changed=False, drain=dict(nodes={}, instances=instances, requests_made=requests_before))
    if params.get("lease_id") and params["state"] != "uncordon":
        # Issue 10 item 21: the run's lease on the node group, before the first cordon.
        # lease_id requires nodegroup_name, so the group was found above.
        claim(module, module.aws("autoscaling"), group.asg)
    state = params["state"]
    if state == "drain":
        balancers = prepared.balancers if prepared is not None else find_load_balancers(
            module, group.asg if group is not None else None)
        result = drain_nodes(core_v1, names, options, log=module.log, load_balancers=balancers, on_emptied=on_emptied)
    elif state == "cordon":
        result = cordon_nodes(core_v1, names, run_id=options.run_id,
                              exclude_from_load_balancers=options.exclude_from_load_balancers,
                              check_mode=module.check_mode, log=module.log)
    else:
        result = uncordon_nodes(core_v1, names, run_id=params["run_id"], check_mode=module.check_mode,
                                log=module.log)
    drained = dict(nodes=result.to_dict(), requests_made=requests_before + result.requests_made)
    if instances is not None:
        drained["instances"] = instances
    output = module.with_diff(dict(changed=result.changed, drain=drained), **result.diff())
    for node in result.nodes.values() if node_warnings else ():
        for warning in node.warnings:
            module.warn("node %s: %s" % (node.name, warning))
    error = result.error()
    if error is not None:
        module.fail_upgrade(error, **output)
    return output
