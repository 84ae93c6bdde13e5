# -*- coding: utf-8 -*-
# Copyright: Contributors to the eksops.nodegroup project
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Every test of the drain's rooms runs on the fake API with fast PDB retries (fast_engine, ../../conftest.py)."""

from __future__ import annotations

import pytest


@pytest.fixture(autouse=True)
def _drain_on_the_fake_api(fast_engine):
    """fast_engine for every test here, pure or not, as when these tests were one module."""
