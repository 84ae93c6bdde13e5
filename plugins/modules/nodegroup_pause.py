#!/usr/bin/python
# -*- coding: utf-8 -*-
# Copyright: Contributors to the eksops.nodegroup project
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)

from __future__ import annotations


DOCUMENTATION = r"""
---
module: nodegroup_pause
short_description: Ask a running node group upgrade to pause at its next safe point, or withdraw the request
version_added: 0.1.0
description:
  - Issue 27 item 3. With O(state=present), writes a pause request on the self-managed node group's Auto Scaling
    group (tag C(eksops.nodegroup/pause) = C(<time, ISO 8601 UTC> <requested_by>)). The run upgrading the group
    reads it at each safe point - before each batch or surge step, and between phases - and stops there with
    C(UpgradePaused), nothing of the next batch begun, its journal kept. The upgrade playbook run again resumes
    where it stopped (its setup phase withdraws the request once it holds the group's lease);
    C(playbooks/abort_upgrade.yml) ends the upgrade instead.
  - A request already on the group is kept as it is (its time and requester), so a rerun changes nothing.
  - With O(wait=true), waits until the run has stopped - its lease released, or lapsed (60 seconds after its last
    renewal), or its journal cleared because it finished before reaching a safe point - or fails with
    C(WaitTimeout) after O(wait_timeout), the request left in place.
  - A group with no upgrade under way (no journal and no live lease) is left alone, with a warning - a request
    written there would only stop the next upgrade at its first safe point.
  - O(state=absent) withdraws the request; the run goes on (a run already stopped is resumed by running the
    upgrade playbook again).
  - An EKS managed node group is refused with C(InvalidParameter) (SPEC K3) - EKS runs its update on an Auto
    Scaling group of its own and offers no pause or cancel of an update.
author:
  - eksops.nodegroup maintainers (@eksops)
options:
  state:
    description:
      - V(present) asks the run to pause; V(absent) withdraws the request.
    type: str
    choices: [present, absent]
    default: present
  requested_by:
    description:
      - Who asks (a user, an AWX job), written into the request and shown in the run's C(UpgradePaused) message.
    type: str
  wait:
    description:
      - With O(state=present), wait until the run has stopped (see the description).
    type: bool
    default: false
  wait_timeout:
    description:
      - Seconds O(wait) waits at most. A run stops at its next safe point, which may be a whole batch away - a drain
        (up to its C(drain_timeout)), the post-drain wait, a termination and new nodes' readiness.
    type: int
    default: 3600
extends_documentation_fragment:
  - eksops.nodegroup.nodegroup
  - eksops.nodegroup.aws
  - eksops.nodegroup.aws.validate_certs
  - eksops.nodegroup.attributes.aws_group
attributes:
  check_mode:
    support: full
    description: Reports whether the request would be written or withdrawn, and does not wait; changes nothing.
  diff_mode:
    support: full
    description: Shows the pause request before and after.
notes:
  - Needs C(autoscaling:DescribeAutoScalingGroups), C(autoscaling:CreateOrUpdateTags), C(autoscaling:DeleteTags) and
    C(eks:DescribeNodegroup) (discovery of managed node groups).
seealso:
  - module: eksops.nodegroup.nodegroup_lease
"""

EXAMPLES = r"""
- name: Ask the upgrade of the workers to pause, and wait until it has stopped
  eksops.nodegroup.nodegroup_pause:
    cluster_name: prod
    nodegroup_name: workers
    requested_by: "{{ awx_user_name | default('ops') }}"
    wait: true
    wait_timeout: 1800

- name: Withdraw the request (the run goes on)
  eksops.nodegroup.nodegroup_pause:
    cluster_name: prod
    nodegroup_name: workers
    state: absent
"""

RETURN = r"""
pause:
  description: The pause request on the group after the task, and what the group's tags say of its upgrade.
  returned: always
  type: dict
  contains:
    asg_name:
      description: The node group's Auto Scaling group.
      type: str
      sample: workers-20240101120000000000000001
    requested:
      description: Whether a pause request is on the group (in check mode, would be).
      type: bool
    requested_at:
      description: When the request was made (null when none, or when a hand-written tag does not say).
      type: str
      sample: "2026-11-28T21:00:00Z"
    requested_by:
      description: Who made it, as the request says (null when it does not).
      type: str
      sample: alice
    upgrade_in_progress:
      description: Whether the group has an upgrade journal or a live run.
      type: bool
    run_id:
      description: The journal's run id (null without a journal).
      type: str
    phase:
      description: The journal's phase (null without a journal).
      type: str
      sample: upgrade
    run_live:
      description: Whether a run holds the group's lease (after O(wait), false).
      type: bool
    lease_holder:
      description: The lease id of the live run (null when none).
      type: str
    lease_expires:
      description: When the live run's lease lapses unless renewed (null when none).
      type: str
    waited_seconds:
      description: Seconds waited for the run to stop (0 without O(wait)).
      type: float
      sample: 42.5
diff:
  description: The request (requested, requested_at, requested_by) before and after.
  returned: in diff mode
  type: dict
"""

from ansible_collections.eksops.nodegroup.plugins.module_utils.host.module import EksopsModule
from ansible_collections.eksops.nodegroup.plugins.module_utils.steps.nodegroup_pause import ARGUMENT_SPEC, run


def main() -> None:
    module = EksopsModule(ARGUMENT_SPEC, uses_aws=True, supports_check_mode=True)
    module.run(lambda: run(module))


if __name__ == "__main__":
    main()
