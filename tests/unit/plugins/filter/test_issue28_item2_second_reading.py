# -*- coding: utf-8 -*-
# Copyright: Contributors to the eksops.nodegroup project
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Issue 28 items 2 and 3, a second reading of the merged fleet: the dry run's report (every wave's dry run in one
batch) and the credentials that read each region's SSM parameters."""

from __future__ import annotations

from ansible_collections.eksops.nodegroup.plugins.filter.fleet_report import fleet_report
from ansible_collections.eksops.nodegroup.plugins.filter.fleet_stop_message import FilterModule as StopFilters

from .test_issue28_item2_fleet_plan import FLEET, host, plan, report

stop_message = StopFilters().filters()["fleet_stop_message"]


def _dry_run(failed):
    """Every node group's dry run planned, but ``failed``'s."""
    return dict((name, dict(nodegroup_upgrade_report=report("failed", "PreflightBlocked") if name == failed
                            else report("planned"))) for name in FLEET)


def test_issue28_item2_a_failed_dry_run_halts_no_other_wave_and_its_message_says_so():
    """A preflight runs every wave's dry run at once: a failure in wave 1 stopped nothing (wave 2's dry run ran), so
    the report has no halt, is failed, and only the failed node group's host is told why."""
    waves = plan()
    fleet = fleet_report(waves, _dry_run("fleet-canary/system"), 1, 0, dry_run=True)
    assert fleet["status"] == "failed" and fleet["halt"] is None and fleet["dry_run"] is True, fleet
    assert [wave["stops"] for wave in fleet["waves"]] == [False] * len(waves["steps"])
    assert fleet["counts"] == {"failed": 1, "planned": len(FLEET) - 1}
    message = stop_message(fleet, "fleet-canary/system")
    assert "its dry run ended failed (PreflightBlocked)" in message and "the later waves do not start" not in message
    clean = fleet_report(waves, _dry_run(None), 1, 0, dry_run=True)
    assert (clean["status"], clean["halt"]) == ("planned", None)


def test_issue28_item2_the_same_failure_in_a_run_halts_the_later_waves():
    """The contrast: in a run, wave 1's failure stops the later waves (max_fail_percentage 0)."""
    waves = plan()
    hostvars = dict((name, {}) for name in FLEET)
    hostvars["fleet-canary/system"] = dict(nodegroup_upgrade_report=report("failed", "X"))
    fleet = fleet_report(waves, hostvars, 1, 0)
    assert fleet["status"] == "halted" and fleet["halt"]["wave"] == 1 and fleet["dry_run"] is False


def test_issue28_item2_each_region_s_ssm_parameters_are_read_with_one_of_its_node_groups_credentials():
    """A fleet whose controller has no credentials of its own (every host's aws_profile set) reads SSM with a
    profile of the region's node groups, not the controller's."""
    hosts = {"a/system": host("a", "system", "canary", aws_profile="prod-a"),
             "b/system": host("b", "system", "canary", aws_profile="prod-b"),
             "c/system": host("c", "system", "canary", region="eu-west-1")}
    assert plan(hosts)["region_profiles"] == {"us-west-2": "prod-a", "eu-west-1": None}
