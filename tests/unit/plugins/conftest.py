# -*- coding: utf-8 -*-
# Copyright: Contributors to the eksops.nodegroup project
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Fixtures shared by the unit tests."""

from __future__ import annotations

import pytest


@pytest.fixture
def fake_api_classes():
    """Nothing to install any more, kept because modules/test_node_drain.py still asks for it by name: the drain
    builds its real PolicyV1Api and AppsV1Api on ``core_v1.api_client``, and a FakeCluster's api_client
    (fakes.FakeApiClient) answers their requests itself. Issue 12: no test patches drain_api.policy_v1/apps_v1."""
