# -*- coding: utf-8 -*-
# Copyright: Contributors to the eksops.nodegroup project
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""The describe step: nodegroup_info's work (the node group, its instances and nodes, old and new, the upgrade
plan) for the module or the node_replace action, which plans the upgrade phase with it in its own process (issue
11 item 4).

``module`` is anything with the EksopsModule surface used here: ``params`` (nodegroup_info's options, ARGUMENT_SPEC),
``aws(service)`` and ``core_v1()``.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any
from ansible_collections.eksops.nodegroup.plugins.module_utils.plan.placement import SURGE_SIZINGS, live_per_az
from ansible_collections.eksops.nodegroup.plugins.module_utils.members.group_nodes import list_all_nodes
from ansible_collections.eksops.nodegroup.plugins.module_utils.nodegroup.journal import Journal
from ansible_collections.eksops.nodegroup.plugins.module_utils.nodegroup.kinds import MANAGED
from ansible_collections.eksops.nodegroup.plugins.module_utils.members.instances import described_for_join, instance_id_of, join_instances_nodes
from ansible_collections.eksops.nodegroup.plugins.module_utils.nodegroup.mixed_instances import override_images
from ansible_collections.eksops.nodegroup.plugins.module_utils.nodegroup.launch_templates import (
    describe_image,
    describe_launch_template,
    resolve_launch_template_id,
    target_lt_version,
)
from ansible_collections.eksops.nodegroup.plugins.module_utils.nodegroup.discovery import (
    NODEGROUP_ARGUMENT_SPEC,
    NodegroupRef,
    asg_launch_template_spec,
    asg_summary,
    find_module_nodegroup,
)
from ansible_collections.eksops.nodegroup.plugins.module_utils.nodegroup.schedule_state import SCHEDULE_DEFAULT_MODULE, SCHEDULES
from ansible_collections.eksops.nodegroup.plugins.module_utils.plan.upgrade_plan import schedule_plan, upgrade_plan
from ansible_collections.eksops.nodegroup.plugins.module_utils.plan.instance_choice import split_old_new
from ansible_collections.eksops.nodegroup.plugins.module_utils.plan.parallelism import SURGE_CAP_DEFAULT

ARGUMENT_SPEC = dict(
    NODEGROUP_ARGUMENT_SPEC,
    target=dict(type="str"),
    update_strategy=dict(type="str", choices=["default", "minimal"], default="default"),
    max_unavailable=dict(type="int"),
    max_unavailable_percentage=dict(type="int"),
    max_surge=dict(type="int"),
    surge_sizing=dict(type="str", choices=list(SURGE_SIZINGS), default="eks"),
    surge_cap=dict(type="int", default=SURGE_CAP_DEFAULT),
    seed=dict(type="int"),
    schedule=dict(type="str", choices=list(SCHEDULES), default=SCHEDULE_DEFAULT_MODULE),
)


def split_target(ec2: Any, lt_id: str, asg_version: str, target: str | None) -> tuple[int | None, str | None]:
    """(target LT version number or None, target image id) for the old/new split: an AMI, a named launch
    template version, or (no target) the version the ASG points at."""
    if target and target.startswith("ami-"):
        describe_image(ec2, target, parameter="target")
        return None, target
    return target_lt_version(ec2, lt_id, asg_version, target, parameter="target")


def journal_target(journal: Journal | None, lt_id: str) -> str | None:
    """Issue 29 item 4: during an upgrade of this launch template, its journal's target version: a node the upgrade
    already replaced stays new when someone points the group back at the old version."""
    if journal is None or journal.launch_template_id != lt_id:
        return None
    return journal.target_launch_template_version


def managed_summary(record: dict[str, Any] | None) -> dict[str, Any] | None:
    """The parts of EKS's DescribeNodegroup answer an upgrade needs, snake_case (None when self-managed)."""
    if record is None:
        return None
    template = record.get("launchTemplate")
    return dict(
        status=record.get("status"), version=record.get("version"), release_version=record.get("releaseVersion"),
        ami_type=record.get("amiType"),
        launch_template=dict(id=template.get("id"), name=template.get("name"), version=template.get("version"))
        if template else None,
        update_config=record.get("updateConfig"),
        health_issues=(record.get("health") or {}).get("issues") or [],
        scaling_config=record.get("scalingConfig"))


def size_before_upgrade(summary: dict[str, Any], journal: Journal | None) -> int:
    """The node group's size before the upgrade (the base of a percentage): its desired capacity, or the one
    the journal recorded when an upgrade is under way and the group is surged."""
    if journal is not None and journal.original_desired_capacity is not None:
        return journal.original_desired_capacity
    return summary["desired_capacity"]


def az_breakdown(availability_zones: Iterable[str], instances: list[dict[str, Any]], old_ids: set[str],
                 new_ids: set[str]) -> list[dict[str, Any]]:
    azs = []
    instance_azs = set(i["availability_zone"] for i in instances if i["availability_zone"])
    for name in sorted(set(availability_zones) | instance_azs):
        in_az = [i["instance_id"] for i in instances if i["availability_zone"] == name]
        azs.append(dict(name=name, instances=len(in_az), old=len([i for i in in_az if i in old_ids]),
                        new=len([i for i in in_az if i in new_ids])))
    return azs


def describe_nodegroup(module: Any, group: NodegroupRef | None = None) -> dict[str, Any]:
    """nodegroup_info's RV(nodegroup): the group (``group``, else found from the options), its instances joined
    with their nodes, old and new, and the plan."""
    params = module.params
    ec2 = module.aws("ec2")
    if group is None:
        group = find_module_nodegroup(module)
    asg = group.asg
    summary = asg_summary(asg)
    spec = asg_launch_template_spec(asg)
    lt_id = resolve_launch_template_id(ec2, spec)
    template = describe_launch_template(ec2, lt_id)
    journal = Journal.from_tags(asg.get("Tags"), asg_name=summary["name"])
    target_version, target_image_id = split_target(ec2, lt_id, spec["version"],
                                                   params["target"] or journal_target(journal, lt_id))

    asg_instances = asg.get("Instances", [])
    ec2_instances = described_for_join(ec2, [i["InstanceId"] for i in asg_instances], module.clients.instance_descriptions)
    nodes = list_all_nodes(module.core_v1(), group.node_selector, "list the nodes of node group %s" % group.nodegroup_name)
    instances = join_instances_nodes(asg_instances, ec2_instances, nodes)
    old, new = split_old_new(instances, target_version, target_image_id, override_images(ec2, asg))
    instance_ids = set(i["instance_id"] for i in instances)
    plan = upgrade_plan(
        old, node_count=len(old) + len(new), az_count=len(summary["availability_zones"]),
        update_strategy=params["update_strategy"], max_unavailable=params["max_unavailable"],
        max_unavailable_percentage=params["max_unavailable_percentage"], max_surge=params["max_surge"],
        surge_cap=params["surge_cap"], seed=params["seed"], group_size=size_before_upgrade(summary, journal),
        surge_sizing=params["surge_sizing"], az_counts=live_per_az(summary["availability_zones"], old + new),
        recorded_surge=journal.surge if journal is not None else None)
    if group.kind == MANAGED:
        plan = None
    else:
        # Issue 11 item 1 (SPEC B1): the terminations' schedule, from the journal's counts once it has them.
        plan["schedule"] = schedule_plan(
            params["schedule"], plan["strategy"], summary["availability_zones"], old, new, plan["surge"],
            plan["batch_size"], plan["seed"], start_per_az=journal.start_per_az if journal is not None else None,
            surged=journal is not None and journal.surge is not None)
    old_ids = [i["instance_id"] for i in old]
    new_ids = [i["instance_id"] for i in new]
    return dict(
        kind=group.kind,
        node_selector=group.node_selector,
        managed=managed_summary(group.managed),
        asg_name=summary["name"],
        asg=summary,
        launch_template=dict(
            id=lt_id, name=template.get("LaunchTemplateName"), version=spec["version"],
            default_version=int(template["DefaultVersionNumber"]),
            latest_version=int(template["LatestVersionNumber"]),
            target_version=target_version, target_image_id=target_image_id),
        instances=instances,
        old_instances=old_ids,
        new_instances=new_ids,
        # Only a label tells a node belongs to the group without its instance: kinds without one have no orphans.
        orphan_nodes=sorted(node.metadata.name for node in nodes
                            if group.node_selector and instance_id_of(node) not in instance_ids),
        azs=az_breakdown(summary["availability_zones"], instances, set(old_ids), set(new_ids)),
        journal=journal.to_dict() if journal is not None else None,
        plan=plan,
    )
