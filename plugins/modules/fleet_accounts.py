#!/usr/bin/python
# -*- coding: utf-8 -*-
# Copyright: Contributors to the eksops.nodegroup project
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)

from __future__ import annotations


DOCUMENTATION = r"""
---
module: fleet_accounts
short_description: Check that a fleet's node groups are in the account their credentials reach
version_added: 0.1.0
description:
  - Issue 28 item 2. C(playbooks/upgrade_fleet.yml) runs it before any change, once per set of credentials its
    node groups use (host variable C(aws_profile), else the controller's), with the node groups of that set.
  - Asks STS GetCallerIdentity once and refuses with C(InvalidParameter), naming the node groups and the parameter
    C(aws_profile), every node group whose account (C(aws_account_id), from the C(eksops.nodegroup.eks_nodegroups)
    inventory) is another; their runs would otherwise act on a cluster of the same name in the caller's account.
  - Read-only.
author:
  - eksops.nodegroup maintainers (@eksops)
options:
  nodegroups:
    description:
      - The node groups that use these credentials.
    type: list
    elements: dict
    required: true
    suboptions:
      host:
        description:
          - The node group's host name.
        type: str
        required: true
      aws_account_id:
        description:
          - The account the inventory found it in.
        type: str
        required: true
extends_documentation_fragment:
  - eksops.nodegroup.aws
  - eksops.nodegroup.aws.validate_certs
  - eksops.nodegroup.attributes.aws_group
  - eksops.nodegroup.attributes.read_only
  - eksops.nodegroup.attributes.controller
notes:
  - Needs no permission (GetCallerIdentity cannot be denied).
seealso:
  - module: eksops.nodegroup.fleet_targets
"""

EXAMPLES = r"""
- name: Check that the production profile reaches the production node groups' account
  eksops.nodegroup.fleet_accounts:
    profile: prod
    region: us-west-2
    nodegroups:
      - {host: prod/system, aws_account_id: "123456789012"}
"""

RETURN = r"""
fleet_accounts:
  description: Whom the credentials are.
  returned: success
  type: dict
  contains:
    account:
      description: The account.
      type: str
      sample: "123456789012"
    arn:
      description: The caller's ARN.
      type: str
      sample: arn:aws:sts::123456789012:assumed-role/eks-fleet/ansible
"""
