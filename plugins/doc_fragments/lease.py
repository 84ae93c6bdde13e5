# -*- coding: utf-8 -*-
# Copyright: Contributors to the eksops.nodegroup project
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)


class ModuleDocFragment(object):
    # The run's lease (module_utils/nodegroup/lease.py LEASE_OPTION), for the modules that change a node group's ASG.
    DOCUMENTATION = r"""
options:
  lease_id:
    description:
      - The id of the run this call belongs to (the playbooks draw one per run). Before its first change the module
        claims the run's lease on the Auto Scaling group (tag C(eksops.nodegroup/lease)), and fails with
        C(UpgradeInProgress), before any change, while another live run holds it (issue 10 item 21). Without it,
        no lease is claimed or checked.
    type: str
"""
