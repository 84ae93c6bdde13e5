# -*- coding: utf-8 -*-
# Copyright: Contributors to the eksops.nodegroup project
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Issue 26 item 6: a drain default is written once in code (the drain engine's DEFAULT_OPTIONS, which the modules'
argument specs take) and every documented copy of it is counted here, so that a new copy, or a copy left behind
when the code's default changes, fails; its range is checked by one rule (plan/drain_limits.py), which DrainOptions
applies and the nodegroup_upgrade role asks through the filter drain_timeout_problem before its first AWS call."""

from __future__ import annotations

import pathlib
import re

import pytest

from ansible_collections.eksops.nodegroup.plugins.filter.drain_timeout_problem import drain_timeout_problem
from ansible_collections.eksops.nodegroup.plugins.module_utils.drain import DEFAULT_OPTIONS, DrainOptions
from ansible_collections.eksops.nodegroup.plugins.module_utils.steps import node_drain, nodegroup_scale_restore
from ansible_collections.eksops.nodegroup.plugins.module_utils.errors import UpgradeError
from ansible_collections.eksops.nodegroup.plugins.module_utils.nodegroup.cluster_proof import NODE_READY_TIMEOUT_DEFAULT

ROOT = pathlib.Path(__file__).resolve().parents[3]
TREES = ("plugins", "roles", "playbooks", "docs")
SUFFIXES = (".py", ".yml", ".yaml", ".md", ".j2", ".json")

# The code's defaults, each written once (the drain engine's DEFAULT_OPTIONS; node_ready_timeout's in cluster_proof).
DEFAULTS = dict(DEFAULT_OPTIONS, node_ready_timeout=NODE_READY_TIMEOUT_DEFAULT)

# Where each default is written, and how many times: the code (once), then the copies users read, each counted: the
# modules' documentation (checked against their argument specs too, module_docs, which take the code's), the doc
# fragment drain_options, the roles' defaults, argument_specs and READMEs, the playbooks and docs/.
ROLE_COPIES = ("defaults/main.yml", "meta/argument_specs.yml", "README.md")
WRITTEN = {
    "drain_timeout": {
        "plugins/module_utils/_drain/options.py": 1,
        "plugins/doc_fragments/drain_options.py": 1,
        "plugins/modules/nodegroup_scale_restore.py": 1,
        "README.md": 1,
        "docs/roles.md": 1,
        "docs/behaviour.md": 1,
        "docs/awx.md": 1,
        "docs/architecture.md": 1,
        "playbooks/upgrade_nodegroup.yml": 1,
        "playbooks/surge_upgrade.yml": 1,
        # The message that names the settings that differ from EKS's: "drain_timeout 600 s (EKS: 900 s)".
        "roles/nodegroup_upgrade/tasks/main.yml": 2,
        **{"roles/%s/%s" % (role, where): 1
           for role in ("nodegroup_upgrade", "upgrade", "surge_upgrade", "scale_down") for where in ROLE_COPIES},
        # Issue 27 item 3: the abort's drains (node_ready_timeout's 900 is counted too, written beside it).
        "playbooks/abort_upgrade.yml": 2,
        "roles/abort_upgrade/defaults/main.yml": 2,
        "roles/abort_upgrade/meta/argument_specs.yml": 1,
        "roles/abort_upgrade/README.md": 2,
    },
    "post_drain_wait": {
        "plugins/module_utils/_drain/options.py": 1,
        "plugins/doc_fragments/drain_options.py": 1,
        "plugins/modules/nodegroup_scale_restore.py": 1,
        "plugins/modules/node_replace.py": 1,
        "README.md": 1,
        "docs/roles.md": 1,
        "docs/behaviour.md": 1,
        "docs/bad-inputs.md": 2,
        "docs/load-balancers.md": 1,
        "playbooks/upgrade_nodegroup.yml": 1,
        "playbooks/surge_upgrade.yml": 1,
        "roles/nodegroup_upgrade/tasks/main.yml": 2,
        "playbooks/abort_upgrade.yml": 1,
        **{"roles/%s/%s" % (role, where): 1
           for role in ("nodegroup_upgrade", "upgrade", "surge_upgrade", "scale_down", "abort_upgrade")
           for where in ROLE_COPIES},
    },
    "node_ready_timeout": {
        "plugins/module_utils/nodegroup/cluster_proof.py": 1,
        "plugins/modules/asg_instance_terminate.py": 1,
        "plugins/modules/node_replace.py": 1,
        "docs/roles.md": 1,
        "playbooks/upgrade_nodegroup.yml": 1,
        "playbooks/surge_upgrade.yml": 1,
        "playbooks/abort_upgrade.yml": 1,
        **{"roles/%s/%s" % (role, where): 1
           for role in ("nodegroup_upgrade", "surge_upgrade", "scale_up", "abort_upgrade") for where in ROLE_COPIES},
    },
    "eviction_concurrency": {
        "plugins/module_utils/_drain/options.py": 1,
        "plugins/doc_fragments/drain_options.py": 1,
    },
}


def sources(root):
    files = [path for tree in TREES for path in sorted((root / tree).rglob("*"))
             if path.is_file() and path.suffix in SUFFIXES]
    return files + [path for path in [root / "README.md"] if path.exists()]


def option_key(lines, index):
    """The YAML key a ``default:`` line at ``index`` belongs to: the nearest line above indented less."""
    indent = len(lines[index]) - len(lines[index].lstrip())
    for line in reversed(lines[:index]):
        if line.strip() and len(line) - len(line.lstrip()) < indent:
            return line
    return ""


def written(option, value, root=ROOT):
    """{file: how many lines write ``value`` for ``option``}: the value on a line that, or one of the three lines
    before it or the one after it, names the option, or a YAML ``default:`` of a key that names it (an option's
    documentation, however long its description)."""
    number = re.compile(r"(?<![\w.])%d(?![\w.])" % value)
    default = re.compile(r"^\s*default:\s*%d\s*$" % value)
    found = {}
    for path in sources(root):
        lines = path.read_text(encoding="utf-8").splitlines()
        for index, line in enumerate(lines):
            if not number.search(line):
                continue
            if any(option in near for near in lines[max(0, index - 3):index + 2]) or (
                    default.match(line) and option in option_key(lines, index)):
                name = str(path.relative_to(root))
                found[name] = found.get(name, 0) + 1
    return found


def test_issue26_item6_the_default_900_of_drain_timeout_is_written_once_in_code_and_each_copy_is_counted():
    """A new copy of the default fails (count it here, or better, take it from the code); a copy that no longer
    says the code's default fails too (its file drops out)."""
    assert DEFAULTS["drain_timeout"] == 900
    assert written("drain_timeout", DEFAULTS["drain_timeout"]) == WRITTEN["drain_timeout"]


@pytest.mark.parametrize("option", ["post_drain_wait", "node_ready_timeout", "eviction_concurrency"])
def test_issue26_item6_the_other_drain_and_timeout_defaults_are_written_once_in_code_and_each_copy_is_counted(option):
    assert written(option, DEFAULTS[option]) == WRITTEN[option]


def test_issue26_item6_the_modules_take_the_default_from_the_code():
    assert node_drain.DELETE_OPTIONS_SPEC["wait_timeout"]["default"] == DEFAULT_OPTIONS["drain_timeout"]
    assert nodegroup_scale_restore.ARGUMENT_SPEC["drain_timeout"]["default"] == DEFAULT_OPTIONS["drain_timeout"]


def test_issue26_item6_the_scan_finds_a_new_copy(tmp_path):
    copy = tmp_path / "roles" / "new" / "defaults" / "main.yml"
    copy.parent.mkdir(parents=True)
    copy.write_text("new_drain_timeout: 900\nnew_wait: 60\n")
    documented = tmp_path / "plugins" / "modules" / "new.py"
    documented.parent.mkdir(parents=True)
    documented.write_text("options:\n  drain_timeout:\n    description:\n      - One.\n      - Two.\n      - Three."
                          "\n    type: int\n    default: 900\n  other:\n    default: 900\n")
    assert written("drain_timeout", 900, tmp_path) == {"roles/new/defaults/main.yml": 1, "plugins/modules/new.py": 1}
    assert written("drain_timeout", 600, tmp_path) == {}


@pytest.mark.parametrize("value, refused", [(0, True), (-5, True), (1, False), (900, False)])
def test_issue26_item6_drain_timeout_is_validated_by_one_rule(value, refused):
    """The role's check (the filter) and the modules' (DrainOptions, through node_drain's and
    nodegroup_scale_restore's options) refuse the same values with the same message."""
    problem = drain_timeout_problem(value)
    assert (problem is not None) == refused
    restore = dict(drain_timeout=value, wait_timeout=600, post_drain_wait=60, post_drain_min_wait=None,
                   ignore_load_balancer_timeout=False, force=False, grace_period=-1)
    if refused:
        assert problem == "drain_timeout must be at least 1 second, got %d" % value
        with pytest.raises(UpgradeError) as raised:
            nodegroup_scale_restore.validate_params(restore)
        assert raised.value.msg == problem and raised.value.details["parameter"] == "drain_timeout"
        with pytest.raises(UpgradeError) as raised:
            DrainOptions(drain_timeout=value)
        assert raised.value.msg == problem
    else:
        nodegroup_scale_restore.validate_params(restore)
