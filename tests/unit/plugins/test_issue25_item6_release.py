# -*- coding: utf-8 -*-
# Copyright: Contributors to the eksops.nodegroup project
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Issue 25 item 6: every plugin's and option's version_added is a version of the collection that galaxy.yml and the
changelog know, and every Python source file carries the licence header."""

from __future__ import annotations

import importlib
import pathlib
import subprocess

import yaml

from ansible_collections.eksops.nodegroup.plugins.module_utils.aws.session import COLLECTION_VERSION

from .module_docs import FRAGMENT_PACKAGE

ROOT = pathlib.Path(__file__).resolve().parents[3]
DOCUMENTED = ("modules", "filter")
# The header the collection's files carry (GPL-3.0-or-later, as galaxy.yml's licence and COPYING).
LICENCE_LINE = "# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)"


def _version(text):
    return tuple(int(part) for part in str(text).split("."))


def _galaxy_version():
    return yaml.safe_load((ROOT / "galaxy.yml").read_text())["version"]


def _options_version_added(options, where):
    """(where, version_added) of every option and suboption that has one."""
    for name, option in (options or {}).items():
        if "version_added" in option:
            yield "%s.%s" % (where, name), option["version_added"]
        yield from _options_version_added(option.get("suboptions"), "%s.%s" % (where, name))


def _documentation(path):
    module = importlib.import_module("ansible_collections.eksops.nodegroup.plugins.%s.%s" % (
        path.parent.name, path.stem))
    return yaml.safe_load(module.DOCUMENTATION)


def _fragments():
    for path in sorted((ROOT / "plugins" / "doc_fragments").glob("*.py")):
        fragment = importlib.import_module(FRAGMENT_PACKAGE + path.stem).ModuleDocFragment
        for attribute in dir(fragment):
            if attribute.isupper():
                yield "%s.%s" % (path.stem, attribute), yaml.safe_load(getattr(fragment, attribute))


def test_issue25_item6_version_added_is_a_released_version_of_galaxy_yml():
    galaxy = _galaxy_version()
    releases = yaml.safe_load((ROOT / "changelogs" / "changelog.yaml").read_text())["releases"] or {}
    assert galaxy in releases, "changelogs/changelog.yaml has no release for galaxy.yml's version %s" % galaxy
    assert COLLECTION_VERSION == galaxy
    seen = []
    for kind in DOCUMENTED:
        for path in sorted((ROOT / "plugins" / kind).glob("*.py")):
            doc = _documentation(path)
            where = "%s/%s" % (kind, path.stem)
            assert "version_added" in doc, where
            seen.append((where, doc["version_added"]))
            seen.extend(_options_version_added(doc.get("options"), where))
    for where, doc in _fragments():
        seen.extend(_options_version_added(doc.get("options"), where))
    assert len(seen) > len(DOCUMENTED)
    for where, version_added in seen:
        assert str(version_added) in releases, "%s: version_added %s is no release in the changelog" % (
            where, version_added)
        assert _version(version_added) <= _version(galaxy), "%s: version_added %s is after galaxy.yml's %s" % (
            where, version_added, galaxy)


def _python_sources():
    listed = subprocess.run(["git", "ls-files", "--cached", "--others", "--exclude-standard", "*.py"], cwd=ROOT,
                            check=True, capture_output=True, text=True).stdout.split()
    return [ROOT / name for name in listed if (ROOT / name).exists()]


def test_issue25_item6_every_python_source_file_has_the_licence_header():
    sources = _python_sources()
    assert any(path.name == "test_issue25_item6_release.py" for path in sources)
    # An empty __init__.py holds no source; ansible-test's empty-init (ansible-core 2.16) wants module_utils' empty.
    missing = [str(path.relative_to(ROOT)) for path in sources
               if path.stat().st_size and LICENCE_LINE not in path.read_text(encoding="utf-8").splitlines()[:5]]
    assert not missing, "no licence header (%s) in the first lines of: %s" % (LICENCE_LINE, ", ".join(missing))
