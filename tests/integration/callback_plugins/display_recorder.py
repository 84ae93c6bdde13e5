# -*- coding: utf-8 -*-
# Copyright: Contributors to the eksops.nodegroup project
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
# Integration-test helper (issue 11 item 4): records every line Ansible's Display shows in the main process, with
# the time it was shown, as AWX's callback receives them (awx_display wraps Display.display in the main process),
# and the time each task's v2_runner_on_ok arrived. Written as JSON to DISPLAY_RECORD_FILE when the play ends.
# Used by tests/integration/test_node_replace_progress.py.

from __future__ import annotations

DOCUMENTATION = """
name: display_recorder
type: aggregate
short_description: record Display lines and task results with their times in DISPLAY_RECORD_FILE
description:
  - For the collection's integration tests only.
options: {}
"""

import json
import os
import time

from ansible.plugins.callback import CallbackBase
from ansible.utils.display import Display


class CallbackModule(CallbackBase):
    CALLBACK_VERSION = 2.0
    CALLBACK_TYPE = "aggregate"
    CALLBACK_NAME = "display_recorder"
    CALLBACK_NEEDS_ENABLED = True

    def __init__(self):
        super().__init__()
        self.lines = []
        self.results = []
        main_pid = os.getpid()
        shown = Display.display
        lines = self.lines

        def display(display_self, msg, *args, **kwargs):
            if os.getpid() == main_pid:  # a worker forks with this wrapper; its lines reach the main process too
                lines.append([time.time(), msg])
            return shown(display_self, msg, *args, **kwargs)

        Display.display = display

    def v2_runner_on_ok(self, result):
        self.results.append([time.time(), result.task_name, "ok"])

    def v2_runner_on_failed(self, result, ignore_errors=False):
        self.results.append([time.time(), result.task_name, "failed"])

    def v2_playbook_on_stats(self, stats):
        with open(os.environ["DISPLAY_RECORD_FILE"], "w", encoding="utf-8") as handle:
            json.dump(dict(lines=self.lines, results=self.results), handle, default=str)
