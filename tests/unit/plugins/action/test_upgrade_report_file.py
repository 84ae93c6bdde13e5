# -*- coding: utf-8 -*-
# Copyright: Contributors to the eksops.nodegroup project
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""upgrade_report_file (issue 11 item 4): the report written on the controller, in the task's process, instead of
by ansible.builtin.copy's two module processes."""

from __future__ import annotations

import json
import os

import pytest

from ansible_collections.eksops.nodegroup.plugins.modules import upgrade_report_file
from ansible_collections.eksops.nodegroup.plugins.module_utils.report.timeline_svg import render

from ..module_docs import assert_docs_match_spec
from ..module_utils.test_timeline_svg import report_of_three_nodes_in_two_zones

# The action plugin the controller and run fixtures (conftest.py) load.
ACTION = "upgrade_report_file"
REPORT = report_of_three_nodes_in_two_zones()


def test_the_documentation_matches_the_argument_spec(controller):
    assert_docs_match_spec(upgrade_report_file, controller.action.ARGUMENT_SPEC)


def test_the_report_is_written_as_to_nice_json_writes_it_with_its_mode(run, tmp_path):
    path = tmp_path / "report.json"
    result = run(report=REPORT, path=str(path))
    assert result["changed"] and result["report_file"]["path"] == str(path)
    text = path.read_text()
    assert json.loads(text) == REPORT
    assert text == json.dumps(REPORT, indent=4, sort_keys=True, separators=(",", ": ")) + "\n"
    assert os.stat(path).st_mode & 0o7777 == 0o644
    assert sorted(p.name for p in tmp_path.iterdir()) == ["report.json", "report.svg"], "no scratch file is left"


def test_the_same_report_again_changes_nothing_and_another_mode_changes_it(run, tmp_path):
    path = tmp_path / "report.json"
    run(report=REPORT, path=str(path))
    assert not run(report=REPORT, path=str(path))["changed"]
    assert run(report=REPORT, path=str(path), mode="0600")["changed"]
    assert os.stat(path).st_mode & 0o7777 == 0o600


def test_check_mode_writes_nothing_and_diff_shows_the_content(run, tmp_path):
    path = tmp_path / "report.json"
    result = run(check_mode=True, diff=True, report=REPORT, path=str(path))
    assert result["changed"] and not path.exists()
    assert result["diff"]["before"] == "" and json.loads(result["diff"]["after"]) == REPORT


def test_a_report_replaces_the_previous_one_whole(run, tmp_path):
    path = tmp_path / "report.json"
    path.write_text('{"old": true}\n')
    run(report=REPORT, path=str(path))
    assert json.loads(path.read_text()) == REPORT


@pytest.mark.parametrize("args, parameter, message", [
    ({"mode": "rw-r--r--"}, "mode", "mode must be an octal number such as '0644', got 'rw-r--r--'"),
    ({"path": "/nonexistent-dir/report.json"}, "path", "cannot write the report to /nonexistent-dir/report.json: "),
])
def test_a_bad_mode_or_directory_fails_naming_it(run, tmp_path, args, parameter, message):
    """Issue 26 item 3: as the collection's modules fail, with the code and the parameter as data."""
    result = run(**dict(dict(report=REPORT, path=str(tmp_path / "r.json")), **args))
    assert (result["failed"], result["changed"], result["code"], result["parameter"]) == (
        True, False, "InvalidParameter", parameter), result
    assert result["msg"].startswith(message), result


def test_issue25_item4_the_picture_is_written_beside_the_report_and_returned(run, tmp_path):
    """Issue 25 item 4: upgrade-report.json's picture is upgrade-report.svg, the task returns its path (the role
    publishes it for AWX), and timeline false writes none."""
    path = tmp_path / "upgrade-report.json"
    result = run(report=REPORT, path=str(path))
    picture = tmp_path / "upgrade-report.svg"
    assert result["report_file"]["timeline"] == dict(path=str(picture), size=len(picture.read_bytes()))
    assert picture.read_text() == render(REPORT)
    assert not run(report=REPORT, path=str(path))["changed"]
    picture.unlink()
    assert run(report=REPORT, path=str(path))["changed"], "a picture gone is written again"
    other = tmp_path / "other.json"
    assert run(report=REPORT, path=str(other), timeline=False)["report_file"]["timeline"] is None
    assert not (tmp_path / "other.svg").exists()
