#!/usr/bin/python
# -*- coding: utf-8 -*-
# Copyright: Contributors to the eksops.nodegroup project
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)

from __future__ import annotations


DOCUMENTATION = r"""
---
module: nodegroup_abort
short_description: Begin the abort of an unfinished node group upgrade - the nodes it cordoned given back
version_added: 0.1.0
description:
  - Issue 27 item 3. The first step of role C(eksops.nodegroup.abort_upgrade) (C(playbooks/abort_upgrade.yml)),
    once no run is live. With the run's lease claimed (O(lease_id); C(UpgradeInProgress) while a live run holds it -
    ask it to pause first, M(eksops.nodegroup.nodegroup_pause)), it withdraws a pause request, and uncordons the
    nodes the upgrade's run cordoned (the C(eksops.nodegroup/cordoned-by) mark of the journal's run id) except the
    surplus nodes it marked, which the restore removes or releases - so nothing is left cordoned that was not
    drained, and a node drained but not terminated (a run killed in between) takes pods again.
  - With O(rollback=true), it also records in the journal the target it rolls back from (C(rollback_of)), before
    the role points the group back at the version the upgrade started from (RV(abort.rollback_version)), so that a
    rerun of the abort goes on rolling back. An upgrade that had changed no node yet (its journal still in setup,
    never scaled) has nothing to roll back (RV(abort.nothing_to_roll_back)) - no C(rollback_of) is recorded, and the
    role only points the group back and restores it. Once it has scaled, an upgrade that started from its own target
    (C(use_current_launch_template)) has nothing to roll back to, and O(rollback=true) is refused for it.
  - The rest of the abort is the role's - the restore (M(eksops.nodegroup.nodegroup_scale_restore)), or for a
    rollback, M(eksops.nodegroup.launch_template_version) and the upgrade run again. Rerun after a kill, each step
    finishes what it left.
  - A group without an upgrade journal has nothing to abort - nothing is changed. An EKS managed node group is
    refused with C(InvalidParameter) (SPEC K3) - EKS runs its update and offers no cancel of it (its C(CancelUpdate)
    cancels only an Auto Mode cluster's C(VersionRollback)); the message says whether EKS's update is still under
    way and how to roll the group back once it has ended.
author:
  - eksops.nodegroup maintainers (@eksops)
options:
  rollback:
    description:
      - Record the rollback in the journal, and return the version to roll back to.
    type: bool
    default: false
extends_documentation_fragment:
  - eksops.nodegroup.nodegroup
  - eksops.nodegroup.lease
  - eksops.nodegroup.aws
  - eksops.nodegroup.k8s
  - eksops.nodegroup.attributes.aws_k8s_groups
attributes:
  check_mode:
    support: full
    description: Reports the nodes it would uncordon and the journal it would write; changes nothing.
  diff_mode:
    support: full
    description: Shows the nodes the run cordoned, and the journal's C(rollback_of), before and after.
notes:
  - Needs C(autoscaling:DescribeAutoScalingGroups), C(autoscaling:CreateOrUpdateTags), C(autoscaling:DeleteTags),
    C(eks:DescribeNodegroup) (discovery of managed node groups), C(eks:DescribeCluster), and on Kubernetes C(list)
    and C(patch) on nodes and C(create) on events.
seealso:
  - module: eksops.nodegroup.nodegroup_pause
  - module: eksops.nodegroup.nodegroup_scale_restore
"""

EXAMPLES = r"""
- name: Give back the nodes the stopped upgrade cordoned
  eksops.nodegroup.nodegroup_abort:
    cluster_name: prod
    nodegroup_name: workers
    lease_id: "{{ abort_lease_id }}"
  register: abort

- name: Then restore the group from the journal
  eksops.nodegroup.nodegroup_scale_restore:
    cluster_name: prod
    nodegroup_name: workers
    lease_id: "{{ abort_lease_id }}"
  when: abort.abort.journal is not none
"""

RETURN = r"""
abort:
  description: What the abort found and did.
  returned: always
  type: dict
  contains:
    asg_name:
      description: The node group's Auto Scaling group.
      type: str
      sample: workers-20240101120000000000000001
    journal:
      description: The upgrade journal (with C(rollback_of) when rolling back), or null when there is none and so
        nothing to abort.
      type: dict
    rollback_version:
      description: With O(rollback=true), the launch template version the upgrade started from, to roll back to.
      type: str
      sample: "3"
    nothing_to_roll_back:
      description: With O(rollback=true), whether the upgrade had changed no node yet (its journal in setup, never
        scaled) - the group is only to be pointed back at RV(abort.rollback_version) and restored, no node replaced.
      type: bool
    uncordoned_nodes:
      description: The nodes the upgrade's run had cordoned that were (in check mode, would be) uncordoned.
      type: list
      elements: str
    pause_withdrawn:
      description: Whether a pause request was (in check mode, would be) withdrawn.
      type: bool
diff:
  description: The nodes the run cordoned (C(cordoned_nodes)) and the journal's C(rollback_of), before and after.
  returned: in diff mode
  type: dict
"""

from ansible_collections.eksops.nodegroup.plugins.module_utils.host.module import EksopsModule
from ansible_collections.eksops.nodegroup.plugins.module_utils.steps.nodegroup_abort import ARGUMENT_SPEC, run


def main() -> None:
    module = EksopsModule(ARGUMENT_SPEC, uses_aws=True, uses_k8s=True, supports_check_mode=True)
    module.run(lambda: run(module))


if __name__ == "__main__":
    main()
