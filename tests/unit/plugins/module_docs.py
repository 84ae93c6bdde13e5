# -*- coding: utf-8 -*-
# Copyright: Contributors to the eksops.nodegroup project
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Check a module's DOCUMENTATION (with its doc fragments) against its argument spec, the way
ansible-test validate-modules does for the parts that matter: names, types, defaults, choices, aliases,
required, elements, and that EXAMPLES/RETURN are YAML."""

from __future__ import annotations

import importlib

import yaml

FRAGMENT_PACKAGE = "ansible_collections.eksops.nodegroup.plugins.doc_fragments."


def documented_options(module):
    doc = yaml.safe_load(module.DOCUMENTATION)
    options = dict(doc.get("options") or {})
    for fragment in doc.get("extends_documentation_fragment", []):
        # eksops.nodegroup.<name>, or eksops.nodegroup.<name>.<variant> for the class attribute <VARIANT>.
        namespace, collection, name, *variant = fragment.split(".")
        assert (namespace, collection) == ("eksops", "nodegroup") and len(variant) <= 1, fragment
        fragment_class = importlib.import_module(FRAGMENT_PACKAGE + name).ModuleDocFragment
        fragment_doc = yaml.safe_load(getattr(fragment_class, variant[0].upper() if variant else "DOCUMENTATION"))
        for option, spec in (fragment_doc.get("options") or {}).items():
            assert option not in options, "option %s documented twice" % option
            options[option] = spec
    return doc, options


def assert_docs_match_spec(module, argument_spec):
    doc, options = documented_options(module)
    assert doc["module"] == module.__name__.rsplit(".", 1)[-1]
    assert set(options) == set(argument_spec), set(options) ^ set(argument_spec)
    for name, spec in argument_spec.items():
        documented = options[name]
        assert documented.get("description"), name
        assert documented.get("type", "str") == spec.get("type", "str"), name
        assert documented.get("default") == spec.get("default"), name
        assert sorted(documented.get("aliases", [])) == sorted(spec.get("aliases", [])), name
        assert documented.get("choices") == spec.get("choices"), name
        assert bool(documented.get("required", False)) == bool(spec.get("required", False)), name
        assert documented.get("elements") == spec.get("elements"), name
    examples = yaml.safe_load(module.EXAMPLES)
    assert all(any(key.startswith("eksops.nodegroup.") or key.startswith("ansible.builtin.") for key in task)
               for task in examples)
    assert yaml.safe_load(module.RETURN)


# Keys Ansible gives their meaning to; every other key a module returns is its result key or, on failure only,
# an UpgradeError detail (issue 12: one result convention).
ANSIBLE_RESULT_KEYS = frozenset(["changed", "msg", "diff", "code", "failed", "invocation", "warnings", "deprecations"])


def result_key(module):
    """The one key a module's RETURN documents its result under: named after what the module manages, as
    amazon.aws modules return theirs (a failure's details aside)."""
    documented = yaml.safe_load(module.RETURN)
    keys = [key for key, entry in documented.items()
            if key not in ANSIBLE_RESULT_KEYS and entry.get("returned") != "failure"]
    assert len(keys) == 1, "%s documents %s outside its result key" % (module.__name__, keys)
    return keys[0]
