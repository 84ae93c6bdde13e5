# -*- coding: utf-8 -*-
# Copyright: Contributors to the eksops.nodegroup project
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
# Integration-test helper: a stdout callback that writes each host's task result, complete, as JSON.
# ansible-core 2.19 ships no `json` stdout callback (it moved to ansible.posix) and `--tree` drops `diff`,
# `warnings` and skipped results, which tests assert on. Used by tests/integration/sandbox_helpers.py.

from __future__ import annotations

DOCUMENTATION = """
name: sandbox_result
type: stdout
short_description: write each task result as JSON to the file named by SANDBOX_RESULT_FILE
description:
  - For the collection's integration tests; one JSON object per host, the last task's result wins.
options: {}
"""

import json
import os

from ansible.plugins.callback import CallbackBase
from ansible.vars.clean import module_response_deepcopy, strip_internal_keys


class CallbackModule(CallbackBase):
    CALLBACK_VERSION = 2.0
    CALLBACK_TYPE = "stdout"
    CALLBACK_NAME = "sandbox_result"

    def __init__(self):
        super().__init__()
        self._results = {}

    def _record(self, result, **status):
        data = strip_internal_keys(module_response_deepcopy(dict(result.result)))
        data.update(status)
        self._results[result.host.get_name()] = data
        with open(os.environ["SANDBOX_RESULT_FILE"], "w", encoding="utf-8") as handle:
            json.dump(self._results, handle, default=str)

    def v2_runner_on_ok(self, result):
        self._record(result, failed=False)

    def v2_runner_on_failed(self, result, ignore_errors=False):
        self._record(result, failed=True)

    def v2_runner_on_skipped(self, result):
        self._record(result, failed=False, skipped=True)

    def v2_runner_on_unreachable(self, result):
        self._record(result, failed=True, unreachable=True)
