# -*- coding: utf-8 -*-
# Copyright: Contributors to the eksops.nodegroup project
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""The house rules of plugins/ (issue 12), read from the source with ast:

- one Kubernetes client factory: typed API objects (``CoreV1Api(...)``, ``ApiClient(...)``) are built only in
  module_utils/k8s.py;
- one AWS client factory: boto3 and botocore are imported only in module_utils/aws.py;
- AWS API calls in one place per service: only module_utils/aws_api/ calls an operation of the services the
  collection uses (an attribute named after a botocore operation, on anything but an imported module, or an
  operation name given to paginate/get_paginator), each under aws.aws_call's error translation;
- no file over 450 lines of code (a module's DOCUMENTATION, EXAMPLES and RETURN aside) and no function over 60.
  The files and functions still over the bar are listed with their size today: each may shrink, none may grow,
  and none may join the list;
- type hints in module_utils/, filter/, test/ and modules/: every function and method (nested ones too, ``__init__`` included)
  annotates its parameters, self and cls aside, and its return.
"""

from __future__ import annotations

import ast
import pathlib
import re

import botocore.session
import pytest
from botocore import xform_name

PLUGINS = pathlib.Path(__file__).resolve().parents[3] / "plugins"
K8S_FACTORY = "module_utils/k8s.py"
AWS_FACTORY = "module_utils/aws.py"
MAX_FILE_LINES = 450
MAX_FUNCTION_LINES = 60
TYPED_API = re.compile(r"^(ApiClient|[A-Z]\w*Api)$")
AWS_CALLS = "module_utils/aws_api/"
AWS_SERVICES = ("autoscaling", "ec2", "eks", "ssm", "sts")
OPERATION_NAME_CALLS = frozenset(["paginate", "get_paginator"])

# Still over the bar (issue 12 splits them next): lines today.
OVERSIZED_FILES = {}
LONG_FUNCTIONS = {}


def sources():
    return sorted((path.relative_to(PLUGINS).as_posix(), path) for path in PLUGINS.rglob("*.py"))


def called_name(call):
    func = call.func
    return func.id if isinstance(func, ast.Name) else func.attr if isinstance(func, ast.Attribute) else None


def test_the_layout_reads_the_whole_plugins_tree():
    names = [name for name, _path in sources()]
    assert K8S_FACTORY in names and AWS_FACTORY in names and "module_utils/_drain/node_drain.py" in names
    assert set(OVERSIZED_FILES) | {name for name, _function in LONG_FUNCTIONS} <= set(names)


def kubernetes_names(tree):
    """The names a file binds to kubernetes.* modules or their members."""
    names = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.ImportFrom) and (node.module or "").split(".")[0] == "kubernetes":
            names.update(alias.asname or alias.name for alias in node.names)
        elif isinstance(node, ast.Import):
            names.update(alias.asname or alias.name.split(".")[0] for alias in node.names
                         if alias.name.split(".")[0] == "kubernetes")
    return names


def built_apis(tree):
    """Typed API objects a file builds: a call of an ``...Api`` or ``ApiClient`` class of the kubernetes client."""
    from_kubernetes = kubernetes_names(tree)
    built = set()
    for node in ast.walk(tree):
        if not isinstance(node, ast.Call) or not TYPED_API.match(called_name(node) or ""):
            continue
        func = node.func
        root = func
        while isinstance(root, ast.Attribute):
            root = root.value
        if isinstance(root, ast.Name) and root.id in from_kubernetes:
            built.add(called_name(node))
    return sorted(built)


def test_the_scan_finds_a_typed_api_built_outside_the_factory():
    tree = ast.parse("from kubernetes.client import CoreV1Api\nimport kubernetes\n"
                     "a = CoreV1Api(c)\nb = kubernetes.client.AppsV1Api(c)\nc = KubeApi(a)\n")
    assert built_apis(tree) == ["AppsV1Api", "CoreV1Api"]


@pytest.mark.parametrize("name, path", sources())
def test_typed_kubernetes_apis_are_built_by_the_one_client_factory(name, path):
    if name == K8S_FACTORY:
        return
    built = built_apis(ast.parse(path.read_text()))
    assert built == [], "%s builds %s; use module_utils/k8s.py (core_v1, apps_v1, policy_v1, version_api)" % (
        name, ", ".join(built))


@pytest.mark.parametrize("name, path", sources())
def test_boto3_and_botocore_are_imported_by_the_one_aws_client_factory(name, path):
    if name == AWS_FACTORY:
        return
    tree = ast.parse(path.read_text())
    imported = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            imported.update(alias.name.split(".")[0] for alias in node.names)
        elif isinstance(node, ast.ImportFrom) and node.module:
            imported.add(node.module.split(".")[0])
    assert not imported & {"boto3", "botocore"}, "%s imports boto3/botocore; use module_utils/aws.py" % name


DOC_STRINGS = frozenset(["DOCUMENTATION", "EXAMPLES", "RETURN"])


def code_lines(source):
    """A file's lines, less a module's DOCUMENTATION, EXAMPLES and RETURN: its documentation is not code to read."""
    tree = ast.parse(source)
    docs = sum(node.end_lineno - node.lineno + 1 for node in tree.body if isinstance(node, ast.Assign)
               and any(isinstance(target, ast.Name) and target.id in DOC_STRINGS for target in node.targets))
    return len(source.splitlines()) - docs


def test_documentation_is_not_counted_as_code():
    assert code_lines('import x\nDOCUMENTATION = """\na\nb\n"""\nRETURN = "c"\ny = 1\n') == 2


@pytest.mark.parametrize("name, path", sources())
def test_no_file_grows_past_the_bar(name, path):
    lines = code_lines(path.read_text())
    assert lines <= OVERSIZED_FILES.get(name, MAX_FILE_LINES), "%s has %d lines of code" % (name, lines)


@pytest.mark.parametrize("name, path", sources())
def test_no_function_grows_past_the_bar(name, path):
    tree = ast.parse(path.read_text())
    for node in ast.walk(tree):
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
            length = node.end_lineno - node.lineno + 1
            limit = LONG_FUNCTIONS.get((name, node.name), MAX_FUNCTION_LINES)
            assert length <= limit, "%s: %s() has %d lines" % (name, node.name, length)


def aws_operations():
    """The snake_case operation names of the services the collection calls, from botocore's service models."""
    session = botocore.session.get_session()
    return frozenset(xform_name(name) for service in AWS_SERVICES
                     for name in session.get_service_model(service).operation_names)


OPERATIONS = aws_operations()


def imported_names(tree):
    """Names bound by import statements: an attribute of one is a module's function, not a client's method."""
    names = set()
    for node in ast.walk(tree):
        if isinstance(node, (ast.Import, ast.ImportFrom)):
            names.update((alias.asname or alias.name).split(".")[0] for alias in node.names)
    return names


def aws_operation_calls(tree):
    """(line, operation) of every AWS operation a file reaches for: ``client.describe_instances``, or
    ``paginate(client, "describe_instances", ...)`` / ``client.get_paginator("describe_instances")``."""
    modules = imported_names(tree)
    found = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Attribute) and node.attr in OPERATIONS:
            if not (isinstance(node.value, ast.Name) and node.value.id in modules):
                found.append((node.lineno, node.attr))
        elif isinstance(node, ast.Call) and called_name(node) in OPERATION_NAME_CALLS:
            found.extend((node.lineno, arg.value) for arg in node.args
                         if isinstance(arg, ast.Constant) and arg.value in OPERATIONS)
    return sorted(found)


def test_the_scan_finds_aws_calls_outside_the_api_files():
    tree = ast.parse("from x import ec2_api\nimport y\n"
                     "ec2.describe_instances(InstanceIds=[])\nec2_api.describe_instances(c, [])\n"
                     "paginate(c, 'describe_auto_scaling_groups', 'AutoScalingGroups')\n"
                     "c.get_paginator('list_updates')\nself.eks.update_nodegroup_version(**r)\n"
                     "call = client.suspend_processes\ny.client.describe_images()\n")
    assert aws_operation_calls(tree) == [(3, "describe_instances"), (5, "describe_auto_scaling_groups"),
                                         (6, "list_updates"), (7, "update_nodegroup_version"),
                                         (8, "suspend_processes"), (9, "describe_images")]


@pytest.mark.parametrize("name, path", sources())
def test_aws_is_called_only_from_the_api_files(name, path):
    if name.startswith(AWS_CALLS):
        return
    calls = aws_operation_calls(ast.parse(path.read_text()))
    assert calls == [], "%s calls AWS directly (%s); add a function to module_utils/aws_api/<service>.py" % (
        name, ", ".join("line %d: %s" % call for call in calls))


@pytest.mark.parametrize("name, path", [(name, path) for name, path in sources() if name.startswith(AWS_CALLS)])
def test_every_aws_call_is_under_the_error_translation(name, path):
    tree = ast.parse(path.read_text())
    for node in tree.body:
        if isinstance(node, ast.FunctionDef) and not node.name.startswith("_"):
            decorators = [called_name(decorator) for decorator in node.decorator_list
                          if isinstance(decorator, ast.Call)]
            assert decorators == ["aws_call"], "%s: %s() is not decorated with aws_call" % (name, node.name)


TYPED_TREES = ("module_utils/", "filter/", "test/", "modules/")
SELF_NAMES = frozenset(["self", "cls"])


def unannotated(tree):
    """(line, function, what) for every function of ``tree`` with a parameter (self and cls aside) or a return
    without a type hint; ``what`` names the parameters, and "return"."""
    found = []
    for node in ast.walk(tree):
        if not isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
            continue
        args = node.args
        params = args.posonlyargs + args.args + args.kwonlyargs + [arg for arg in (args.vararg, args.kwarg) if arg]
        missing = [param.arg for param in params if param.annotation is None and param.arg not in SELF_NAMES]
        if node.returns is None:
            missing.append("return")
        if missing:
            found.append((node.lineno, node.name, ", ".join(missing)))
    return sorted(found)


def test_the_scan_finds_functions_without_type_hints():
    tree = ast.parse("def f(a: int, b, *args, c: str = '', **kwargs) -> None:\n    pass\n"
                     "class C:\n    def __init__(self, x: int):\n        pass\n"
                     "    @classmethod\n    def make(cls) -> 'C':\n        def inner(y: int):\n            pass\n"
                     "        return cls()\n"
                     "def g(*, k: int, **kw: str) -> int:\n    return k\n")
    assert unannotated(tree) == [(1, "f", "b, args, kwargs"), (4, "__init__", "return"), (8, "inner", "return")]


@pytest.mark.parametrize("name, path", [(name, path) for name, path in sources() if name.startswith(TYPED_TREES)])
def test_functions_have_type_hints(name, path):
    missing = unannotated(ast.parse(path.read_text()))
    assert missing == [], "%s: functions without type hints (issue 12): %s" % (
        name, "; ".join("line %d: %s() lacks %s" % entry for entry in missing))
