# -*- coding: utf-8 -*-
# Copyright: Contributors to the eksops.nodegroup project
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Fixtures shared by the unit tests."""

from __future__ import annotations

import os

import pytest

from ansible_collections.eksops.nodegroup.plugins.module_utils.host.request_budget import AWS_RATE_ENV, K8S_RATE_ENV

# Issue 28 item 4: the unit tests' clients answer in-process (moto, fakes); the host's request budgets would pace
# them, in a budget that every test process of the machine shares for the real AWS endpoints' names.
os.environ[AWS_RATE_ENV] = os.environ[K8S_RATE_ENV] = "0"


@pytest.fixture
def fake_api_classes():
    """Nothing to install any more, kept because modules/test_node_drain.py still asks for it by name: the drain
    builds its real PolicyV1Api and AppsV1Api on ``core_v1.api_client``, and a FakeCluster's api_client
    (fakes.FakeApiClient) answers their requests itself. Issue 12: no test patches drain_api.policy_v1/apps_v1."""
