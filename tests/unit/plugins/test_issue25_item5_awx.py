# -*- coding: utf-8 -*-
# Copyright: Contributors to the eksops.nodegroup project
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Issue 25 item 5: what docs/awx.md ships for AWX cannot drift from the collection.

- The survey (extensions/awx/upgrade_nodegroup.survey.json) asks for the public variables of
  playbooks/upgrade_nodegroup.yml, with the types, choices, defaults and required flags of the role options they
  become (roles/nodegroup_upgrade/meta/argument_specs.yml), in AWX's survey format.
- The execution environment (execution-environment.yml) builds, per ansible-builder 3's own `create` (the build
  context, no container engine), an image that installs this version of the collection, the ansible-core and
  ansible-runner that `make test` pins, and the collection's requirements.txt and bindep.txt (found by
  ansible-builder's introspection of the installed collection, meta/execution-environment.yml)."""

from __future__ import annotations

import json
import pathlib
import re
import shutil
import subprocess
import sys

import yaml

from ansible_collections.eksops.nodegroup.plugins.module_utils.host.module import merged_argument_spec

ROOT = pathlib.Path(__file__).resolve().parents[3]
BIN = pathlib.Path(sys.executable).parent
SURVEY = ROOT / "extensions" / "awx" / "upgrade_nodegroup.survey.json"
PLAYBOOK = ROOT / "playbooks" / "upgrade_nodegroup.yml"
ROLE_SPEC = ROOT / "roles" / "nodegroup_upgrade" / "meta" / "argument_specs.yml"
# Public variables the survey leaves out, and why (docs/awx.md): credentials are AWX credentials, and the execution
# environment's file system goes with the job (the report is in the job's artifacts).
# AWX's surveys ask no list or dict (issue 27): alarm_names and maintenance_window are the job template's extra
# variables (docs/awx.md).
NOT_ASKED = {"kubeconfig", "kube_context", "upgrade_report_path", "alarm_names", "maintenance_window"}
# AWX's survey question types (awx/main/models/mixins.py, SurveyJobTemplateMixin) and the option types each gives.
SURVEY_TYPES = {"text": {"str", "path"}, "integer": {"int"}, "multiplechoice": {"str", "bool"}}
BOOLEAN_CHOICES = ["false", "true"]


def playbook_variables():
    """{public variable: (the role option it becomes, that option's spec)} of the playbook: its include_role vars,
    and its module_defaults for the collection's action groups (the modules' own options)."""
    play = yaml.safe_load(PLAYBOOK.read_text())[0]
    public = set(play["vars"])
    role = yaml.safe_load(ROLE_SPEC.read_text())["argument_specs"]["main"]["options"]
    module_options = merged_argument_spec({}, uses_aws=True, uses_k8s=True)
    mapping = {}
    for group in play["module_defaults"].values():
        for option, value in group.items():
            variable = re.fullmatch(r"\{\{ (\w+) or omit \}\}", value).group(1)
            mapping[variable] = (option, module_options[option])
    for task in play["tasks"]:
        for option, value in (task.get("vars") or {}).items():
            match = re.fullmatch(r"\{\{ (\w+) \}\}", str(value))
            if match and match.group(1) in public:
                mapping[match.group(1)] = (option, role[option])
    assert set(mapping) == public, public ^ set(mapping)
    return mapping


def _check_question(question, option):
    variable = question["variable"]
    option_type = option.get("type", "str")
    assert option_type in SURVEY_TYPES[question["type"]], variable
    assert question["required"] == bool(option.get("required")), variable
    if option_type == "bool":
        assert question["choices"] == BOOLEAN_CHOICES, variable
        assert question["default"] == str(option.get("default", False)).lower(), variable
        return
    if question["type"] == "multiplechoice" and option.get("choices"):
        assert question["choices"] == option["choices"], variable
    assert question["default"] == option.get("default", ""), variable
    if question["type"] == "integer" and question["default"] != "":
        assert question["min"] <= question["default"] <= question["max"], variable


def test_issue25_item5_the_survey_asks_the_public_variables_as_the_roles_take_them():
    survey = json.loads(SURVEY.read_text())
    assert survey["name"] and survey["description"]
    spec = survey["spec"]
    mapping = playbook_variables()
    asked = [question["variable"] for question in spec]
    assert len(asked) == len(set(asked))
    assert set(asked) == set(mapping) - NOT_ASKED, set(asked) ^ (set(mapping) - NOT_ASKED)
    for question in spec:
        assert set(question) >= {"question_name", "question_description", "required", "type", "variable", "default"}
        _check_question(question, mapping[question["variable"]][1])
    required = {variable for variable, (_option, spec) in mapping.items() if spec.get("required")}
    assert required == {"cluster_name", "nodegroup_name"} <= set(asked)


def _pinned(name):
    for line in (ROOT / "test-requirements.txt").read_text().splitlines():
        if line.startswith(name + "=="):
            return line
    raise AssertionError("%s is not pinned in test-requirements.txt" % name)


def test_issue25_item5_the_execution_environment_installs_the_collection_and_its_requirements(tmp_path):
    galaxy = yaml.safe_load((ROOT / "galaxy.yml").read_text())
    tarball = "eksops-nodegroup-%s.tar.gz" % galaxy["version"]
    definition = yaml.safe_load((ROOT / "execution-environment.yml").read_text())
    assert definition["additional_build_files"][0]["src"] == "build/dist/" + tarball
    # ansible-builder reads the definition's files relative to it: a copy with a freshly built collection.
    work = tmp_path / "ee"
    (work / "build" / "dist").mkdir(parents=True)
    shutil.copy(ROOT / "execution-environment.yml", work)
    subprocess.run([str(BIN / "ansible-galaxy"), "collection", "build", "--output-path", str(work / "build" / "dist"),
                    str(ROOT)], check=True, capture_output=True)
    assert (work / "build" / "dist" / tarball).exists()
    subprocess.run([str(BIN / "ansible-builder"), "create", "-f", str(work / "execution-environment.yml"), "-c",
                    str(work / "context"), "--output-filename", "Containerfile"], check=True, capture_output=True)
    containerfile = (work / "context" / "Containerfile").read_text()
    assert 'ARG ANSIBLE_INSTALL_REFS="%s %s"' % (_pinned("ansible-core"), _pinned("ansible-runner")) in containerfile
    assert "ansible-galaxy collection install $ANSIBLE_GALAXY_CLI_COLLECTION_OPTS -r requirements.yml" in containerfile
    assert "introspect.py introspect" in containerfile and "install-from-bindep" in containerfile
    assert yaml.safe_load((work / "context" / "_build" / "requirements.yml").read_text()) == {
        "collections": [{"name": "/build/collection/" + tarball, "type": "file"}]}
    assert (work / "context" / "_build" / "collection" / tarball).exists()
    # What the build's introspection finds in the collection, installed as the image's galaxy stage installs it.
    collections = tmp_path / "collections"
    subprocess.run([str(BIN / "ansible-galaxy"), "collection", "install", "--force", "-p", str(collections),
                    str(work / "build" / "dist" / tarball)], check=True, capture_output=True)
    assert (collections / "ansible_collections" / "eksops" / "nodegroup" / "meta" / "execution-environment.yml").exists()
    introspected = subprocess.run([str(BIN / "ansible-builder"), "introspect", str(collections)], check=True,
                                  capture_output=True, text=True).stdout
    for line in (ROOT / "requirements.txt").read_text().splitlines():
        if line and not line.startswith("#"):
            assert "%s  # from collection eksops.nodegroup" % line in introspected, line
    assert "python3 [platform:rpm platform:dpkg]  # from collection eksops.nodegroup" in introspected
