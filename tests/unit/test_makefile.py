# -*- coding: utf-8 -*-
# Copyright: Contributors to the eksops.nodegroup project
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""`make demo` as a person sees it (issue 25 item 4), read from what make would run (make -n)."""

from __future__ import annotations

import pathlib
import re
import shutil
import subprocess

import pytest

ROOT = pathlib.Path(__file__).resolve().parents[2]


def recipe(target, tmp_path):
    """The commands `make -n TARGET` prints for a checkout with no .venv yet (the Makefile copied alone)."""
    shutil.copy(ROOT / "Makefile", tmp_path / "Makefile")
    for needed in ("test-requirements.txt", "tests/sandbox/pyproject.toml"):
        (tmp_path / needed).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / needed).write_text("")
    return subprocess.run(["make", "-n", "-C", str(tmp_path), target], capture_output=True, text=True,
                          check=True).stdout


@pytest.mark.skipif(shutil.which("make") is None, reason="make is not installed")
def test_issue25_item4_the_install_says_what_it_does_as_it_goes(tmp_path):
    """About 5 minutes of pip install used to run --quiet: silence. pip now says each package; each step is named."""
    commands = recipe("venv", tmp_path)
    installs = [line for line in commands.splitlines() if " install " in line and "/pip " in line]
    assert len(installs) == 2 and not [line for line in installs if "--quiet" in line or " -q " in line]
    assert "about 5 minutes" in commands and "is ready" in commands


@pytest.mark.skipif(shutil.which("make") is None, reason="make is not installed")
def test_issue25_item4_the_demo_says_it_forces_past_a_blocking_budget_and_where_its_picture_is(tmp_path):
    commands = recipe("demo", tmp_path)
    assert re.search(r"force=true.*drain_timeout=20", commands)
    assert "PodDisruptionBudget payments/billing never allows" in commands
    assert "-e force=true -e drain_timeout=20" in commands
    assert ".sandbox/demo/upgrade-report.svg" in commands
