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
