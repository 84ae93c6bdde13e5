# -*- coding: utf-8 -*-
# Copyright: Contributors to the eksops.nodegroup project
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Fixtures shared by the module_utils tests."""

from __future__ import annotations

import pytest
from moto import mock_aws

from ..moto_nodegroup import MotoNodegroup


@pytest.fixture(scope="module")
def world():
    """One moto node group for the module (building one takes about a second); tests restore what they change."""
    with mock_aws():
        yield MotoNodegroup(desired=5)
