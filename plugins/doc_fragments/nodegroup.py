# -*- coding: utf-8 -*-
# Copyright: Contributors to the eksops.nodegroup project
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)

from __future__ import absolute_import, division, print_function

__metaclass__ = type


class ModuleDocFragment(object):
    # Which node group a module acts on, for the modules that find its Auto Scaling group
    # (argument spec: NODEGROUP_ARGUMENT_SPEC in module_utils/nodegroup.py).
    DOCUMENTATION = r"""
options:
  cluster_name:
    description:
      - Name of the EKS cluster.
      - With O(nodegroup_name), finds the node group's Auto Scaling group by its C(eks:cluster-name) and
        C(eks:nodegroup-name) tags.
    type: str
    required: true
  nodegroup_name:
    description:
      - Name of the node group; the value of the C(eks.amazonaws.com/nodegroup) node label and of the Auto
        Scaling group tag C(eks:nodegroup-name).
    type: str
    required: true
  asg_name:
    description:
      - Name of the node group's Auto Scaling group. Discovered from its C(eks:cluster-name) and
        C(eks:nodegroup-name) tags when not set.
      - A group tagged for another cluster or node group is refused.
    type: str
"""
