# -*- coding: utf-8 -*-
# Copyright: Contributors to the eksops.nodegroup project
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Unit tests of the test eksops.nodegroup.unset (issue 25 item 2: ansible-core 2.16 to 2.18 render a null as an
empty string once it goes through a second template)."""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import pytest

# The module, not its TestModule class, which pytest would collect as tests.
from ansible_collections.eksops.nodegroup.plugins.test import unset as unset_plugin

unset = unset_plugin.unset


def test_issue25_item2_the_test_is_registered_by_its_name():
    assert unset_plugin.TestModule().tests()["unset"] is unset


@pytest.mark.parametrize("value", [None, ""])
def test_issue25_item2_null_and_the_empty_string_are_unset(value):
    assert unset(value)


@pytest.mark.parametrize("value", [0, False, "0", " ", [], {}, "default", 1])
def test_issue25_item2_zero_false_and_empty_collections_are_set(value):
    # max_unavailable_percentage 0 or use_current_launch_template false are values the user gave, checked as such.
    assert not unset(value)
