# -*- coding: utf-8 -*-
# Copyright: Contributors to the eksops.nodegroup project
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""The abort step (issue 27 item 3): nodegroup_abort's work, the first step of role abort_upgrade once no run is
live. With the run's lease claimed (UpgradeInProgress while a live run holds it: ask it to pause first), it:

- withdraws a pause request (the upgrade ends here; no run is left to pause);
- uncordons the nodes the upgrade's run cordoned (the cordoned-by mark of the journal's run id), except the surplus
  nodes it marked (SPEC B1), which the restore removes or releases itself: so nothing is left cordoned that was not
  drained, and a node drained but not yet terminated (a run killed in between) takes pods again instead of staying
  cordoned in a group that nobody upgrades any more;
- with ``rollback``, records in the journal the target it rolls back from (rollback_of), before the role retargets
  the journal at the version the upgrade started from: a rerun of the abort then goes on rolling back.

The rest is the collection's own machinery, in the role: the restore (nodegroup_scale_restore: surplus drained and
removed, sizes and processes back, journal and lease cleared), or for a rollback, launch_template_version back to
previous_launch_template_version and the upgrade run again to it. Each step is idempotent: a rerun after a kill at
any point finishes the abort. A group without a journal has nothing to abort. An EKS managed node group is refused
(SPEC K3): EKS runs its update and has no cancel of it.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import TYPE_CHECKING, Any

from ansible_collections.eksops.nodegroup.plugins.module_utils.drain import parse_cordon_mark, uncordon_nodes
from ansible_collections.eksops.nodegroup.plugins.module_utils.errors import UpgradeError, invalid_parameter
from ansible_collections.eksops.nodegroup.plugins.module_utils.members.group_nodes import list_nodegroup_nodes
from ansible_collections.eksops.nodegroup.plugins.module_utils.nodegroup.discovery import (
    NODEGROUP_ARGUMENT_SPEC,
    NodegroupRef,
    find_module_nodegroup,
)
from ansible_collections.eksops.nodegroup.plugins.module_utils.nodegroup.journal import (
    CORDONED_BY_ANNOTATION,
    Journal,
    write_journal,
)
from ansible_collections.eksops.nodegroup.plugins.module_utils.nodegroup.kinds import MANAGED
from ansible_collections.eksops.nodegroup.plugins.module_utils.nodegroup.lease import LEASE_OPTION, claim
from ansible_collections.eksops.nodegroup.plugins.module_utils.nodegroup.pause import clear_pause, pause_request
from ansible_collections.eksops.nodegroup.plugins.module_utils.nodegroup.schedule_state import marked_surplus
from ansible_collections.eksops.nodegroup.plugins.module_utils.plan.instance_choice import LEAVING_STATES

if TYPE_CHECKING:
    from ansible_collections.eksops.nodegroup.plugins.module_utils.host.module import EksopsModule

ARGUMENT_SPEC = dict(NODEGROUP_ARGUMENT_SPEC, rollback=dict(type="bool", default=False), **LEASE_OPTION)


def managed_abort_refusal(group: NodegroupRef) -> UpgradeError:
    """SPEC K3: EKS runs a managed group's update; this collection keeps no journal there to restore from, and EKS
    records no release to go back to: an update's params (DescribeUpdate) name the version and release it goes to,
    not the ones before. EKS's CancelUpdate cancels only an Auto Mode cluster's VersionRollback ("CancelUpdate",
    Amazon EKS API Reference). What can be done is named: wait for EKS's update (DescribeNodegroup's status), then
    an update to the release the group ran before."""
    managed = group.managed or {}
    if managed.get("status") == "UPDATING":
        now = ("EKS's update of it is under way (status UPDATING): wait until it has ended (the node group ACTIVE "
               "again, aws eks describe-nodegroup), then")
    else:
        now = "No EKS update of it is under way (status %s, release %s):" % (
            managed.get("status"), managed.get("releaseVersion"))
    return invalid_parameter(
        "nodegroup_name", "Node group %s of cluster %s is an EKS managed node group: EKS runs its update and offers no "
        "cancel of it (EKS's CancelUpdate cancels only an Auto Mode cluster's VersionRollback), this collection writes "
        "no journal on its Auto Scaling group (%s) to restore from, and EKS records no release to go back to (an "
        "update's params name only the version and release it goes to). %s to roll it back, run "
        "playbooks/upgrade_nodegroup.yml with release_version set to the AMI release it ran before (an "
        "UpdateNodegroupVersion that EKS runs as any other update). Nothing was changed."
        % (group.nodegroup_name, group.cluster_name, group.asg_name, now), kind=group.kind, asg_name=group.asg_name)


def run_cordons(nodes: Iterable[Any], run_id: str | None) -> list[str]:
    """The names of the nodes (node_view objects) run ``run_id`` cordoned, but not those it marked surplus."""
    if not run_id:
        return []
    surplus = marked_surplus(nodes, run_id)
    cordoned = []
    for node in nodes:
        mark = (node.metadata.annotations or {}).get(CORDONED_BY_ANNOTATION)
        if mark is not None and parse_cordon_mark(mark)[0] == run_id and node.metadata.name not in surplus:
            cordoned.append(node.metadata.name)
    return sorted(cordoned)


def nothing_to_roll_back(journal: Journal, instances: Iterable[Mapping[str, Any]]) -> bool:
    """Whether the upgrade has changed no node yet: its journal still in setup and never scaled (asg_surge records
    desired_capacity_set before the first surge, scale-up or batch of either strategy; a journal retargeted back to
    setup keeps it), not a rollback's own (rollback_of), and no instance of the group (``instances``, the Auto
    Scaling group's) that is not leaving it launched from the target: once setup pointed the group at the target,
    any launch (a cluster autoscaler's scale-out, a health replacement) runs it, and such a node is to roll back.
    A journal already pointed back (its target the version it started from: a rerun of this abort after a kill)
    has none either. The rollback is then to point the group back and restore it (setup may have suspended
    processes), with no node to replace."""
    target = str(journal.target_launch_template_version)
    return journal.phase == "setup" and journal.desired_capacity_set is None and journal.rollback_of is None and (
        target == str(journal.previous_launch_template_version) or not any(
            str((instance.get("LaunchTemplate") or {}).get("Version")) == target
            for instance in instances if instance.get("LifecycleState") not in LEAVING_STATES))


def rollback_journal(journal: Journal, asg: Mapping[str, Any]) -> Journal:
    """The journal of a rollback: rollback_of recorded, once (a rerun finds it there). Refused, naming rollback,
    when the journal records no other version the upgrade started from (use_current_launch_template)."""
    if journal.rollback_of is not None or nothing_to_roll_back(journal, asg.get("Instances", [])):
        return journal
    previous, target = journal.previous_launch_template_version, journal.target_launch_template_version
    if not previous or str(previous) == str(target):
        raise invalid_parameter(
            "rollback", "The upgrade of Auto Scaling group %s (run %s) records no launch template version before its "
            "target %s (an upgrade to the version the group already used, use_current_launch_template): there is "
            "nothing to roll back to. Abort without rollback to restore the group. Nothing was changed."
            % (asg["AutoScalingGroupName"], journal.run_id, target), journal=journal.to_dict())
    # Issue 27 item 1: a failed health gate's record goes; its workloads were judged on the target the rollback
    # leaves, and judging them first would stop the rollback that replaces its nodes.
    return journal.replace(rollback_of=str(target), health_gate_failed=None)


def run(module: EksopsModule) -> dict[str, Any]:
    """The module's result: changed, abort (what was found and done), and the diff."""
    params = module.params
    group = find_module_nodegroup(module)
    if group.kind == MANAGED:
        raise managed_abort_refusal(group)
    autoscaling, asg, name = module.aws("autoscaling"), group.asg, group.asg_name
    journal = group.journal()
    abort = dict(asg_name=name, journal=None, rollback_version=None, uncordoned_nodes=[], pause_withdrawn=False,
                 nothing_to_roll_back=False)
    if journal is None:
        return dict(changed=False, abort=abort)
    updated = rollback_journal(journal, asg) if params["rollback"] else journal
    # From here the abort changes the group: the lease first (UpgradeInProgress while a live run holds it).
    claim(module, autoscaling, asg)
    names = run_cordons(list_nodegroup_nodes(module.core_v1(), group), journal.run_id)
    abort.update(journal=updated.to_dict(), uncordoned_nodes=names,
                 pause_withdrawn=pause_request(asg.get("Tags")) is not None,
                 rollback_version=updated.previous_launch_template_version if params["rollback"] else None,
                 nothing_to_roll_back=params["rollback"] and nothing_to_roll_back(journal, asg.get("Instances", [])))
    if not module.check_mode:
        if abort["pause_withdrawn"]:
            clear_pause(autoscaling, asg)
        if names:
            uncordon_nodes(module.core_v1(), names, run_id=journal.run_id, log=module.log)
        if updated != journal:
            write_journal(autoscaling, name, updated, previous=journal)
    changed = bool(names or abort["pause_withdrawn"] or updated != journal)
    return module.with_diff(dict(changed=changed, abort=abort),
                            before=dict(cordoned_nodes=names, rollback_of=journal.rollback_of),
                            after=dict(cordoned_nodes=[], rollback_of=updated.rollback_of))
