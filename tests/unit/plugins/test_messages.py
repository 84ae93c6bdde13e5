# -*- coding: utf-8 -*-
# Copyright: Contributors to the eksops.nodegroup project
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""What a run prints, read from the source (issue 25 item 4): no line break YAML kept by accident in a role's
message (Ansible prints it as a literal \\n), no behaviour-spec item in a message, and every SPEC item the shipped
documentation cites defined in docs/behaviour.md, which ships with the collection."""

from __future__ import annotations

import ast
import pathlib
import re

import yaml

ROOT = pathlib.Path(__file__).resolve().parents[3]
JINJA = re.compile(r"\{\{.*?\}\}|\{%.*?%\}|\{#.*?#\}", re.S)
MESSAGE_KEYS = ("msg", "fail_msg", "success_msg")
SPEC_CITATION = re.compile(r"\bSPEC ([A-Z]\d+(?:\s*[-,/]\s*[A-Z]?\d+)*)")
ITEM = re.compile(r"[A-Z]\d+")
# A bare item in parentheses, "(S4)", as messages cited them.
BARE_ITEM = re.compile(r"\([A-Z]\d+(?:[-,][A-Z]?\d+)*\)")


def yaml_files():
    return sorted(list((ROOT / "roles").rglob("*.yml")) + list((ROOT / "playbooks").rglob("*.yml")))


def messages(node):
    """Every msg, fail_msg and success_msg string of a task file."""
    if isinstance(node, dict):
        for key, value in node.items():
            if key in MESSAGE_KEYS and isinstance(value, str):
                yield value
            yield from messages(value)
    elif isinstance(node, list):
        for value in node:
            yield from messages(value)


def role_messages():
    return [(path.relative_to(ROOT).as_posix(), text) for path in yaml_files()
            for text in messages(yaml.safe_load(path.read_text()))]


def printed_strings(path):
    """The string constants of a plugin that are not documentation (docstrings, DOCUMENTATION, EXAMPLES, RETURN)."""
    tree = ast.parse(path.read_text())
    docs = set()
    for node in ast.walk(tree):
        if isinstance(node, (ast.Module, ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)) and node.body \
                and isinstance(node.body[0], ast.Expr) and isinstance(node.body[0].value, ast.Constant):
            docs.add(id(node.body[0].value))
        if isinstance(node, ast.Assign) and any(isinstance(target, ast.Name) and target.id in (
                "DOCUMENTATION", "EXAMPLES", "RETURN") for target in node.targets):
            docs.add(id(node.value))
    return [node.value for node in ast.walk(tree) if isinstance(node, ast.Constant) and isinstance(node.value, str)
            and id(node) not in docs]


def test_the_scans_read_the_messages_and_the_plugins():
    assert len(role_messages()) > 15
    assert any("PodEvictionFailure" in text for text in printed_strings(ROOT / "plugins/module_utils/errors.py"))


def test_issue25_item4_no_role_message_keeps_a_line_break_outside_its_expressions():
    """A folded (>-) message keeps the line breaks around a line more indented than its first: Ansible then
    prints a literal \\n in the middle of the message (the scale-up's "desired capacity\\n6 -> 12")."""
    broken = [(path, text[:120]) for path, text in role_messages() if "\n" in JINJA.sub("", text)]
    assert not broken


def test_issue25_item4_no_message_cites_a_behaviour_spec_item():
    """What a run prints says it in words: "(SPEC U4)" or "(S4)" means nothing to the person reading a job."""
    cited = [(path, text[:120]) for path, text in role_messages() if "SPEC" in text or BARE_ITEM.search(text)]
    cited += [(path.relative_to(ROOT).as_posix(), text[:120]) for path in sorted((ROOT / "plugins").rglob("*.py"))
              for text in printed_strings(path) if re.search(r"\bSPEC [A-Z]\d", text)]
    assert not cited


def shipped_text_files():
    """The collection's files a user reads: the documentation, the plugins, roles and playbooks."""
    files = [ROOT / "README.md"] + sorted((ROOT / "docs").glob("*.md"))
    for folder, pattern in (("plugins", "*.py"), ("roles", "*"), ("playbooks", "*.yml"), ("changelogs", "*.y*ml")):
        files += sorted(path for path in (ROOT / folder).rglob(pattern) if path.is_file())
    return files


def test_issue25_item4_every_spec_item_cited_is_defined_in_docs_behaviour_md():
    behaviour = ROOT / "docs" / "behaviour.md"
    assert behaviour.is_file(), "the behaviour spec the documentation cites ships as docs/behaviour.md"
    defined = set(re.findall(r"\*\*([A-Z]\d+)\b", behaviour.read_text()))
    cited = {}
    for path in shipped_text_files():
        for citation in SPEC_CITATION.findall(path.read_text(errors="replace")):
            for item in ITEM.findall(citation):
                cited.setdefault(item, path.relative_to(ROOT).as_posix())
    assert len(cited) > 30
    assert dict((item, where) for item, where in cited.items() if item not in defined) == {}
    galaxy = yaml.safe_load((ROOT / "galaxy.yml").read_text())
    assert not [pattern for pattern in galaxy.get("build_ignore") or [] if pattern.startswith("docs")]
