# -*- coding: utf-8 -*-
# Copyright: Contributors to the eksops.nodegroup project
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Reading a pod (_drain/pods.py): timestamps, and when a pod counts as gone (D15)."""

from __future__ import annotations

import datetime

from ansible_collections.eksops.nodegroup.plugins.module_utils._drain.pods import is_gone, parse_time

from ...fakes import NOW, make_pod


def test_parse_time_accepts_fractions_and_z():
    assert parse_time("2024-06-01T12:00:00Z") == NOW
    assert parse_time("2024-06-01T12:00:00.5Z") == NOW + datetime.timedelta(microseconds=500000)
    assert parse_time(None) is None


def test_D15_gone_means_deleted_or_replaced_by_another_uid():
    original = make_pod("web-0", uid="one")
    assert not is_gone(original, {("default", "web-0"): original})
    assert is_gone(original, {})
    assert is_gone(original, {("default", "web-0"): make_pod("web-0", uid="two")})
