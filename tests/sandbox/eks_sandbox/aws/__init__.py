# -*- coding: utf-8 -*-
# Copyright: Contributors to the eksops.nodegroup project
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""The sandbox's AWS side: moto in server mode with version-pinned corrections (see moto_patches.py)."""

from .sim import AwsSim

__all__ = ["AwsSim"]
