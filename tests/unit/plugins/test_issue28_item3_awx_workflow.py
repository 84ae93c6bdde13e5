# -*- coding: utf-8 -*-
# Copyright: Contributors to the eksops.nodegroup project
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Issue 28 item 3: the fleet's AWX configuration (extensions/awx/fleet_workflow.yml, docs/awx.md *A fleet*) as AWX
takes it. awx.awx cannot be installed from the registries this project reaches, so its options are checked against
the option names of awx.awx's modules, read from AWX's source (github.com/ansible/awx at e21dd0a0,
awx_collection/plugins/modules/<module>.py, DOCUMENTATION), and the workflow's graph against AWX's rules: a node's
job type, limit, slice count or variables reach the job only when its job template asks for them on launch
(awx/main/models/jobs.py, JobTemplate._accept_or_ignore_job_kwargs over get_ask_mapping), identifiers are unique,
and every edge names a node."""

from __future__ import annotations

import pathlib

import yaml

ROOT = pathlib.Path(__file__).resolve().parents[3]
WORKFLOW = ROOT / "extensions" / "awx" / "fleet_workflow.yml"
FLEET_VARS = ROOT / "playbooks" / "vars" / "upgrade_fleet.yml"
MODULE_OPTIONS = {
    "credential_type": {"description", "injectors", "inputs", "kind", "name", "new_name", "state"},
    "inventory": {"copy_from", "description", "host_filter", "input_inventories", "instance_groups", "kind", "name",
                  "new_name", "organization", "prevent_instance_group_fallback", "state", "variables"},
    "inventory_source": {"credential", "custom_virtualenv", "description", "enabled_value", "enabled_var",
                         "execution_environment", "host_filter", "inventory", "limit", "name", "new_name",
                         "notification_templates_error", "notification_templates_started",
                         "notification_templates_success", "organization", "overwrite", "overwrite_vars",
                         "scm_branch", "source", "source_path", "source_project", "source_vars", "state", "timeout",
                         "update_cache_timeout", "update_on_launch", "verbosity"},
    "job_template": {"allow_simultaneous", "ask_credential_on_launch", "ask_diff_mode_on_launch",
                     "ask_execution_environment_on_launch", "ask_forks_on_launch", "ask_instance_groups_on_launch",
                     "ask_inventory_on_launch", "ask_job_slice_count_on_launch", "ask_job_type_on_launch",
                     "ask_labels_on_launch", "ask_limit_on_launch", "ask_scm_branch_on_launch",
                     "ask_skip_tags_on_launch", "ask_tags_on_launch", "ask_timeout_on_launch",
                     "ask_variables_on_launch", "ask_verbosity_on_launch", "become_enabled", "copy_from", "credential",
                     "credentials", "custom_virtualenv", "description", "diff_mode", "execution_environment",
                     "extra_vars", "force_handlers", "forks", "host_config_key", "instance_groups", "inventory",
                     "job_slice_count", "job_tags", "job_type", "labels", "limit", "name", "new_name",
                     "notification_templates_error", "notification_templates_started",
                     "notification_templates_success", "organization", "playbook", "prevent_instance_group_fallback",
                     "project", "scm_branch", "skip_tags", "start_at_task", "state", "survey_enabled", "survey_spec",
                     "timeout", "use_fact_cache", "vault_credential", "verbosity", "webhook_credential",
                     "webhook_service"},
    "workflow_job_template": {"allow_simultaneous", "ask_inventory_on_launch", "ask_labels_on_launch",
                              "ask_limit_on_launch", "ask_scm_branch_on_launch", "ask_skip_tags_on_launch",
                              "ask_tags_on_launch", "ask_variables_on_launch", "copy_from", "description",
                              "destroy_current_nodes", "extra_vars", "inventory", "job_tags", "labels", "limit", "name",
                              "new_name", "notification_templates_approvals", "notification_templates_error",
                              "notification_templates_started", "notification_templates_success", "organization",
                              "scm_branch", "skip_tags", "state", "survey_enabled", "survey_spec",
                              "webhook_credential", "webhook_service", "workflow_nodes"},
}
# workflow_job_template's workflow_nodes suboptions, and theirs.
NODE_OPTIONS = {"all_parents_must_converge", "diff_mode", "execution_environment", "extra_data", "forks",
                "identifier", "inventory", "job_slice_count", "job_tags", "job_type", "limit", "related", "scm_branch",
                "skip_tags", "state", "timeout", "unified_job_template", "verbosity"}
TEMPLATE_OPTIONS = {"description", "inventory", "name", "organization", "timeout", "type"}
RELATED_OPTIONS = {"always_nodes", "credentials", "failure_nodes", "instance_groups", "labels", "success_nodes"}
# A node's prompt and the job template's field that must ask for it (AskForField names).
PROMPTS = {"job_type": "ask_job_type_on_launch", "limit": "ask_limit_on_launch", "forks": "ask_forks_on_launch",
           "job_slice_count": "ask_job_slice_count_on_launch", "extra_data": "ask_variables_on_launch",
           "timeout": "ask_timeout_on_launch", "verbosity": "ask_verbosity_on_launch"}


class _Loader(yaml.SafeLoader):
    """Ansible's YAML: ``!unsafe`` strings as plain strings."""


_Loader.add_constructor("!unsafe", lambda loader, node: loader.construct_scalar(node))


def tasks():
    return {task["name"]: task for task in yaml.load(WORKFLOW.read_text(), Loader=_Loader)[0]["tasks"]}


def module_args(prefix):
    found = [(name.split(".")[-1], args) for task in tasks().values() for name, args in task.items()
             if name.startswith("awx.awx.") and name.split(".")[-1] == prefix]
    assert len(found) == 1, prefix
    return found[0][1]


def nodes():
    return {node["identifier"]: node for node in module_args("workflow_job_template")["workflow_nodes"]}


def test_issue28_item3_every_option_is_one_of_awx_awx_modules():
    for name, task in tasks().items():
        modules = [key for key in task if key.startswith("awx.awx.")]
        assert len(modules) == 1, name
        assert set(task[modules[0]]) <= MODULE_OPTIONS[modules[0].split(".")[-1]], name
    for identifier, node in nodes().items():
        assert set(node) <= NODE_OPTIONS, identifier
        assert set(node["unified_job_template"]) <= TEMPLATE_OPTIONS, identifier
        assert set(node.get("related", {})) <= RELATED_OPTIONS, identifier


def test_issue28_item3_the_workflow_is_preflight_approval_canary_rings():
    graph = nodes()
    edges = {identifier: [child["identifier"] for children in node.get("related", {}).values()
                          for child in children if isinstance(child, dict)] for identifier, node in graph.items()}
    assert all(child in graph for children in edges.values() for child in children)
    assert edges == {"preflight": ["approve"], "approve": ["canary"], "canary": ["rings"], "rings": []}
    assert all(list(graph[identifier]["related"]) == ["success_nodes"] for identifier in ("preflight", "canary"))
    # The preflight is the whole fleet's dry run; the rings are the whole fleet, the canary already on target.
    assert (graph["preflight"]["job_type"], graph["preflight"].get("limit")) == ("check", None)
    assert (graph["rings"]["job_type"], graph["rings"].get("limit")) == ("run", None)
    approval = graph["approve"]["unified_job_template"]
    assert approval["type"] == "workflow_approval" and approval["timeout"] > 0
    # The canary's limit is the inventory's group of the first ring (keyed_groups prefix ring, docs/awx.md).
    play_vars = yaml.load(WORKFLOW.read_text(), Loader=_Loader)[0]["vars"]
    first_ring = yaml.safe_load(FLEET_VARS.read_text())["fleet_rings"][0]
    assert graph["canary"]["limit"] == "{{ awx_canary_limit }}" and play_vars["awx_canary_limit"] == "ring_" + first_ring


def test_issue28_item3_every_prompt_of_a_node_is_one_its_job_template_asks_for():
    template = module_args("job_template")
    assert template["playbook"] == "playbooks/upgrade_fleet.yml"
    for identifier, node in nodes().items():
        if node["unified_job_template"]["type"] != "job_template":
            continue
        assert node["unified_job_template"]["name"] == template["name"], identifier
        for prompt in set(node) & set(PROMPTS):
            assert template.get(PROMPTS[prompt]) is True, (identifier, prompt)


def test_issue28_item3_the_inventory_source_is_the_plugin_file_of_the_project():
    source = module_args("inventory_source")
    play_vars = yaml.load(WORKFLOW.read_text(), Loader=_Loader)[0]["vars"]
    assert source["source"] == "scm" and source["update_on_launch"] is True
    # The plugin reads only files whose names end so (plugins/inventory/eks_nodegroups.py, verify_file).
    assert play_vars["awx_inventory_source_path"].endswith("eks_nodegroups.yml")
    # The kubeconfig reaches the playbook as KUBECONFIG, in a file AWX writes into the private data directory.
    injectors = module_args("credential_type")["injectors"]
    assert injectors["env"] == {"KUBECONFIG": "{{ tower.filename.kubeconfig }}"}
    assert injectors["file"] == {"template.kubeconfig": "{{ kubeconfig }}"}
