# -*- coding: utf-8 -*-
# Copyright: Contributors to the eksops.nodegroup project
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""eksops.nodegroup.upgrade_report_file: write the upgrade report as JSON to a file of the controller.

The report is the controller's own file (the roles read a dry run's plan from it; AWX keeps it with the job), so
it is written here, in the task's process, rather than by ansible.builtin.copy, which runs two module processes
(stat, then copy) for it: about 1.5 s of every playbook run (issue 11 item 4). plugins/modules/upgrade_report_file.py
is its documentation.
"""

from __future__ import annotations

import json
import os
import tempfile

from ansible.module_utils.common.text.converters import to_text
from ansible.plugins.action import ActionBase

from ansible_collections.eksops.nodegroup.plugins.module_utils.errors import UpgradeError, invalid_parameter
from ansible_collections.eksops.nodegroup.plugins.module_utils.host.module import error_result
from ansible_collections.eksops.nodegroup.plugins.module_utils.report.timeline_svg import render

ARGUMENT_SPEC = dict(
    report=dict(type="dict", required=True),
    path=dict(type="path", required=True),
    mode=dict(type="raw", default="0644"),
    timeline=dict(type="bool", default=True),
)


def timeline_path(path: str) -> str:
    """The picture's file: the report's, with .svg for its extension (upgrade-report.json: upgrade-report.svg)."""
    return os.path.splitext(path)[0] + ".svg"


def report_json(report: dict) -> str:
    """The report as ansible.builtin.to_nice_json writes it, with a final newline."""
    return json.dumps(report, indent=4, sort_keys=True, separators=(",", ": ")) + "\n"


def file_mode(mode: object) -> int:
    """An octal string ("0644") or an int (420), as ansible.builtin.copy takes them."""
    try:
        return int(mode, 8) if isinstance(mode, str) else int(mode)
    except (TypeError, ValueError):
        raise invalid_parameter("mode", "mode must be an octal number such as '0644', got %r" % (mode,))


def read_text(path: str) -> str | None:
    try:
        with open(path, encoding="utf-8") as current:
            return current.read()
    except FileNotFoundError:
        return None


def write_atomically(path: str, content: str, mode: int) -> None:
    """Write ``content`` to a file beside ``path``, then rename it over ``path``: a reader (AWX, a person) never
    sees half a report."""
    directory = os.path.dirname(path) or "."
    handle, scratch = tempfile.mkstemp(prefix=".%s." % os.path.basename(path), dir=directory)
    try:
        with os.fdopen(handle, "w", encoding="utf-8") as out:
            out.write(content)
        os.chmod(scratch, mode)
        os.replace(scratch, path)
    except BaseException:
        if os.path.exists(scratch):
            os.unlink(scratch)
        raise


class ActionModule(ActionBase):
    """Writes the report on the controller, whatever the task's host or delegate_to."""

    TRANSFERS_FILES = False
    _requires_connection = False

    def run(self, tmp=None, task_vars=None):
        result = super().run(tmp, task_vars)
        del tmp
        validation, _args = self.validate_argument_spec(argument_spec=ARGUMENT_SPEC)
        try:
            result.update(self._write_report(validation.validated_parameters))
        except UpgradeError as err:
            result.update(changed=False, failed=True, **error_result(err))
        return result

    def _write_report(self, params: dict) -> dict:
        """The task's result: the report (and its picture) written, or what would change in check mode."""
        result = {}
        path = params["path"]
        mode = file_mode(params["mode"])
        try:
            content = report_json(params["report"])
        except (TypeError, ValueError) as err:
            raise invalid_parameter("report", "the report is not JSON: %s" % to_text(err))
        before = read_text(path)
        changed = self._write("the report", path, before, content, mode)
        result.update(changed=changed, report_file=dict(path=path, size=len(content.encode("utf-8")), timeline=None))
        if params["timeline"]:
            picture = timeline_path(path)
            drawing = render(params["report"])
            result["changed"] = self._write("its picture", picture, read_text(picture), drawing, mode) or changed
            result["report_file"]["timeline"] = dict(path=picture, size=len(drawing.encode("utf-8")))
        if self._task.diff and before != content:
            result["diff"] = dict(before=before or "", after=content, before_header=path, after_header=path)
        return result

    def _write(self, what: str, path: str, before: str | None, content: str, mode: int) -> bool:
        """Whether ``path`` changes (its content or mode); written unless in check mode."""
        mode_differs = before is not None and (os.stat(path).st_mode & 0o7777) != mode
        changed = before != content or mode_differs
        if changed and not self._task.check_mode:
            try:
                write_atomically(path, content, mode)
            except OSError as err:
                raise invalid_parameter("path", "cannot write %s to %s: %s" % (what, path, to_text(err)))
        return changed
