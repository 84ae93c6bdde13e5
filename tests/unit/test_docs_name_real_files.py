# -*- coding: utf-8 -*-
# Copyright: Contributors to the eksops.nodegroup project
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Issue 26 item 1: the architecture a newcomer reads names the files as they are. Every Python file that
docs/architecture.md and the README name in backticks exists (by its path, or its path's tail under plugins/)."""

from __future__ import annotations

import pathlib
import re

import pytest

ROOT = pathlib.Path(__file__).resolve().parents[2]
DOCS = ["docs/architecture.md", "README.md", "docs/roles.md", "docs/performance.md"]
NAMED = re.compile(r"`([\w./<>-]+\.py)")


def python_files():
    return [path.relative_to(ROOT).as_posix() for path in ROOT.glob("**/*.py")
            if not any(part.startswith(".") or part == "build" for part in path.relative_to(ROOT).parts)]


FILES = python_files()


def exists(name):
    if "<" in name:  # a pattern such as aws/<service>.py
        return True
    return any(path == name or path.endswith("/" + name) for path in FILES)


def test_the_check_finds_a_file_that_moved():
    assert exists("module_utils/phases/replace/loop.py") and exists("loop.py")
    assert not exists("module_utils/replace_loop.py")


@pytest.mark.parametrize("doc", DOCS)
def test_every_python_file_a_doc_names_exists(doc):
    named = sorted(set(NAMED.findall((ROOT / doc).read_text())))
    assert [name for name in named if not exists(name)] == []
