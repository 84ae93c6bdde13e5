# -*- coding: utf-8 -*-
# Copyright: Contributors to the eksops.nodegroup project
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Unit tests of the phase_ended filter: the time of each phase of role nodegroup_upgrade."""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

from ansible_collections.eksops.nodegroup.plugins.filter.phase_ended import FilterModule, phase_ended


def test_the_filter_is_registered_by_its_name():
    assert FilterModule().filters() == {"phase_ended": phase_ended}


def test_the_phase_is_added_in_seconds_to_a_tenth_and_the_times_given_are_kept():
    before = {"setup": 3.2}
    assert phase_ended(before, "scale_up", 1714557600.0, 1714557695.66) == {"setup": 3.2, "scale_up": 95.7}
    assert before == {"setup": 3.2}


def test_the_start_may_be_a_string_as_a_fact_keeps_it():
    assert phase_ended({}, "setup", "100.0", 103.24) == {"setup": 3.2}


def test_a_phase_timed_again_is_replaced():
    assert phase_ended({"upgrade": 5.0, "setup": 1.0}, "upgrade", 10.0, 12.0) == {"upgrade": 2.0, "setup": 1.0}
