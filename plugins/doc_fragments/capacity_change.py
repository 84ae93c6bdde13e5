# -*- coding: utf-8 -*-
# Copyright: Contributors to the eksops.nodegroup project
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)


class ModuleDocFragment(object):
    # accept_current_capacity (asg_state.check_capacity_unmoved), for the modules that check SPEC C3.
    DOCUMENTATION = r"""
options:
  accept_current_capacity:
    description:
      - When the group's desired capacity is not the one the upgrade last set (the cluster autoscaler or a person
        changed it; C(ClusterAutoscalerActive) otherwise), accept it and go on (issue 10 item 23). A raise is
        kept on top of the size the group returns to at the end; a lower value is that size when it is below it.
        Recorded in the journal before anything else changes.
    type: bool
    default: false
"""
