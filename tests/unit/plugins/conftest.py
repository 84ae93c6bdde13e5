# -*- coding: utf-8 -*-
# Copyright: Contributors to the eksops.nodegroup project
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Fixtures that put the fakes of fakes.py in place of the real API classes (request them by name)."""

from __future__ import annotations

import pytest

from ansible_collections.eksops.nodegroup.plugins.module_utils._drain import api as drain_api, eviction


@pytest.fixture
def fake_api_classes(monkeypatch):
    """The drain's PolicyV1Api and AppsV1Api are the API client itself: a FakeCluster answers all three APIs."""
    monkeypatch.setattr(drain_api, "policy_v1", lambda api_client: api_client)
    monkeypatch.setattr(drain_api, "apps_v1", lambda api_client: api_client)


@pytest.fixture
def fast_engine(fake_api_classes, monkeypatch):
    """fake_api_classes, and PDB refusals retried every 0.05 s instead of 5 s. Both are monkeypatch's: a test that
    needs the real classes calls monkeypatch.undo()."""
    monkeypatch.setattr(eviction, "PDB_RETRY_SECONDS", 0.05)
