# -*- coding: utf-8 -*-
# Copyright: Contributors to the eksops.nodegroup project
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""The sandbox playing EKS for managed node groups: CreateNodegroup, the node-group API (answered instead of moto),
health reconciliation and the managed node update workflow (see service.py)."""

from .router import EksRouter
from .service import EksNodegroups

__all__ = ["EksNodegroups", "EksRouter"]
