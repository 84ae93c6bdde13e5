# -*- coding: utf-8 -*-
# Copyright: Contributors to the eksops.nodegroup project
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""The simulated Kubernetes API server and controllers of the sandbox."""

from .sim import KubeSim

__all__ = ["KubeSim"]
