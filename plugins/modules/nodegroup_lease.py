#!/usr/bin/python
# -*- coding: utf-8 -*-
# Copyright: Contributors to the eksops.nodegroup project
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)

from __future__ import annotations


DOCUMENTATION = r"""
---
module: nodegroup_lease
short_description: Release a run's lease on a node group's Auto Scaling group
version_added: 0.1.0
description:
  - One run at a time upgrades a node group (issue 10 item 21). The modules that change the group claim the run's
    lease (tag C(eksops.nodegroup/lease) on its Auto Scaling group) before their first change, renew it while they
    work, and refuse with C(UpgradeInProgress) while another live run holds it; a lease nobody renews ends after
    60 seconds.
  - This module releases the lease when O(lease_id) holds it, so that a failed run's rerun does not wait for it
    to end. A lease held by another run is left alone. The upgrade journal, if any, stays.
author:
  - eksops.nodegroup maintainers (@eksops)
attributes:
  check_mode:
    support: full
    description: Reports whether the lease would be released and changes nothing.
  diff_mode:
    support: none
    description: The lease is bookkeeping of the run, not a state of the node group to show.
options:
  lease_id:
    description: The id of the run whose lease to release.
    type: str
    required: true
extends_documentation_fragment:
  - eksops.nodegroup.nodegroup
  - eksops.nodegroup.aws
  - eksops.nodegroup.aws.validate_certs
  - eksops.nodegroup.attributes.aws_group
notes:
  - Needs C(autoscaling:DescribeAutoScalingGroups) and C(autoscaling:DeleteTags).
"""

EXAMPLES = r"""
- name: Release this run's lease after a failure
  eksops.nodegroup.nodegroup_lease:
    cluster_name: prod
    nodegroup_name: workers
    lease_id: "{{ upgrade_lease_id }}"
"""

RETURN = r"""
lease:
  description: The run's lease on the node group's Auto Scaling group.
  returned: always
  type: dict
  contains:
    lease_id:
      description: O(lease_id).
      type: str
      sample: 2026-11-22T02-00-00Z-4f1c
    released:
      description: Whether the lease was held by O(lease_id) and released (or, in check mode, would be).
      type: bool
      sample: true
"""

from typing import Any
from ansible_collections.eksops.nodegroup.plugins.module_utils.nodegroup.lease import lease_of, release
from ansible_collections.eksops.nodegroup.plugins.module_utils.host.module import EksopsModule
from ansible_collections.eksops.nodegroup.plugins.module_utils.nodegroup.discovery import NODEGROUP_ARGUMENT_SPEC, find_module_nodegroup

ARGUMENT_SPEC = dict(NODEGROUP_ARGUMENT_SPEC, lease_id=dict(type="str", required=True))


def run(module: EksopsModule) -> dict[str, Any]:
    params = module.params
    autoscaling = module.aws("autoscaling")
    group = find_module_nodegroup(module)
    if module.check_mode:
        lease = lease_of(group.asg.get("Tags"))
        ours = lease is not None and lease[0] == params["lease_id"]
        return dict(changed=ours, lease=dict(lease_id=params["lease_id"], released=ours))
    released = release(autoscaling, group.asg, params["lease_id"])
    return dict(changed=released, lease=dict(lease_id=params["lease_id"], released=released))


def main() -> None:
    module = EksopsModule(ARGUMENT_SPEC, uses_aws=True, supports_check_mode=True)
    module.run(lambda: run(module))


if __name__ == "__main__":
    main()
