# -*- coding: utf-8 -*-
# Copyright: Contributors to the eksops.nodegroup project
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""The bad-input table (bad_inputs.yml): its cases for the tests, and docs/bad-inputs.md rendered from it.

    python tests/integration/bad_inputs.py > docs/bad-inputs.md
"""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any

import yaml

TABLE = Path(__file__).with_name("bad_inputs.yml")
DOC = Path(__file__).resolve().parents[2] / "docs" / "bad-inputs.md"
PLAYBOOKS = ("upgrade_nodegroup.yml", "surge_upgrade.yml")


def load() -> dict[str, Any]:
    with TABLE.open(encoding="utf-8") as handle:
        return yaml.safe_load(handle)


def cases(playbooks: bool) -> list[dict[str, Any]]:
    """The cases run through a playbook (``playbooks``) or a module, each with its full arguments in ``args``."""
    table = load()
    chosen = []
    for case in table["cases"]:
        if (case["where"] in PLAYBOOKS) != playbooks:
            continue
        defaults = table["playbook_defaults" if playbooks else "module_defaults"]
        chosen.append(dict(case, args=dict(defaults, **case["input"])))
    return chosen


def case_id(case: dict[str, Any]) -> str:
    return "%s-%s" % (case["where"], ",".join("%s=%s" % item for item in case["input"].items()))


def _cell(value: Any) -> str:
    return "`%s`" % json.dumps(value) if not isinstance(value, str) else "`%s`" % value


def render() -> str:
    table = load()
    lines = [
        "# Bad inputs, refused before any change",
        "",
        "<!-- Rendered from tests/integration/bad_inputs.yml by tests/integration/bad_inputs.py; do not edit. -->",
        "",
        "Every input below is refused before the first AWS or Kubernetes change, with a message that names the",
        "parameter (issue 10 items 2, 3, 18, 24). `make test` runs each case on the demo sandbox",
        "(tests/integration/test_bad_inputs_playbooks.py and test_bad_inputs_modules.py) and checks the sandbox's",
        "counters: no mutating AWS call and no Kubernetes write between before and after.",
        "",
        "Playbook cases add their variables to `%s`; module cases add their options to `%s`."
        % (" ".join("-e %s=%s" % item for item in table["playbook_defaults"].items()),
           ", ".join("%s: %s" % item for item in table["module_defaults"].items())),
        "",
        "| # | Where | Input | Refused, naming | The message says |",
        "|---|---|---|---|---|",
    ]
    for number, case in enumerate(table["cases"], 1):
        given = ", ".join("%s=%s" % (key, _cell(value)) for key, value in case["input"].items())
        row = (number, case["where"], given, case["parameter"], case["says"])
        lines.append("| %d | %s | %s | `%s` | %s |" % row)
    return "\n".join(lines) + "\n"


if __name__ == "__main__":
    sys.stdout.write(render())
