"""upgrade_report_file (issue 11 item 4): the report written on the controller, in the task's process, instead of
by ansible.builtin.copy's two module processes."""

from __future__ import annotations

import json
import os
from types import SimpleNamespace

import pytest
from ansible.errors import AnsibleActionFail
from ansible.playbook.task import Task
from ansible.template import Templar
from ansible.parsing.dataloader import DataLoader

from ansible_collections.eksops.nodegroup.plugins.action.upgrade_report_file import ARGUMENT_SPEC, ActionModule
from ansible_collections.eksops.nodegroup.plugins.modules import upgrade_report_file

from ..module_docs import assert_docs_match_spec

REPORT = {"cluster_name": "prod", "phase_seconds": {"setup": 4.7, "upgrade": 150.2}, "error": None}


def run(check_mode=False, diff=False, **args):
    task = Task()
    task.args = args
    task.check_mode = check_mode
    task.diff = diff
    loader = DataLoader()
    # ActionBase.run only asks the connection whether its shell has a temporary directory: it has, none is needed.
    connection = SimpleNamespace(_shell=SimpleNamespace(tmpdir="unused"))
    action = ActionModule(task, connection, None, loader, Templar(loader), None)
    return action.run(task_vars={})


def test_the_documentation_matches_the_argument_spec():
    assert_docs_match_spec(upgrade_report_file, ARGUMENT_SPEC)


def test_the_report_is_written_as_to_nice_json_writes_it_with_its_mode(tmp_path):
    path = tmp_path / "report.json"
    result = run(report=REPORT, path=str(path))
    assert result["changed"] and result["report_file"]["path"] == str(path)
    text = path.read_text()
    assert json.loads(text) == REPORT
    assert text == json.dumps(REPORT, indent=4, sort_keys=True, separators=(",", ": ")) + "\n"
    assert os.stat(path).st_mode & 0o7777 == 0o644
    assert [p.name for p in tmp_path.iterdir()] == ["report.json"], "no scratch file is left"


def test_the_same_report_again_changes_nothing_and_another_mode_changes_it(tmp_path):
    path = tmp_path / "report.json"
    run(report=REPORT, path=str(path))
    assert not run(report=REPORT, path=str(path))["changed"]
    assert run(report=REPORT, path=str(path), mode="0600")["changed"]
    assert os.stat(path).st_mode & 0o7777 == 0o600


def test_check_mode_writes_nothing_and_diff_shows_the_content(tmp_path):
    path = tmp_path / "report.json"
    result = run(check_mode=True, diff=True, report=REPORT, path=str(path))
    assert result["changed"] and not path.exists()
    assert result["diff"]["before"] == "" and json.loads(result["diff"]["after"]) == REPORT


def test_a_report_replaces_the_previous_one_whole(tmp_path):
    path = tmp_path / "report.json"
    path.write_text('{"old": true}\n')
    run(report=REPORT, path=str(path))
    assert json.loads(path.read_text()) == REPORT


@pytest.mark.parametrize("args, message", [
    ({"mode": "rw-r--r--"}, "mode must be an octal number"),
    ({"path": "/nonexistent-dir/report.json"}, "cannot write the report to /nonexistent-dir/report.json"),
])
def test_a_bad_mode_or_directory_fails_naming_it(tmp_path, args, message):
    with pytest.raises(AnsibleActionFail, match=message):
        run(**dict(dict(report=REPORT, path=str(tmp_path / "r.json")), **args))
