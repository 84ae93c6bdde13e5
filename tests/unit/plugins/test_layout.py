# -*- coding: utf-8 -*-
# Copyright: Contributors to the eksops.nodegroup project
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""The house rules of plugins/ (issue 12), read from the source with ast:

- one Kubernetes client factory: typed API objects (``CoreV1Api(...)``, ``ApiClient(...)``) are built only in
  module_utils/kube/client.py;
- one AWS client factory: boto3 and botocore are imported only in module_utils/aws/session.py;
- AWS API calls in one place per service: only module_utils/aws/ calls an operation of the services the
  collection uses (an attribute named after a botocore operation, on anything but an imported module, or an
  operation name given to paginate/get_paginator), each under aws.aws_call's error translation;
- no file over 450 lines of code (a module's DOCUMENTATION, EXAMPLES and RETURN aside) and no function over 60.
  The files and functions still over the bar are listed with their size today: each may shrink, none may grow,
  and none may join the list;
- layers (issue 26 item 6): only the drain facade (module_utils/drain.py) imports the drain engine (_drain/); the
  client factories (aws/, kube/, host/clients.py, host/job_guard.py, host/clock.py, host/waiter.py) import no
  domain code; plan/ and report/ are
  pure; nothing imports a layer above its own (steps/ run the domain, phases/ run steps);
- names that do not collide: no two module_utils files share a name, and no public function or class is defined
  in two of them (the step interface of steps/ and the operations of aws/<service>.py aside);
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
K8S_FACTORY = "module_utils/kube/client.py"
AWS_FACTORY = "module_utils/aws/session.py"
MAX_FILE_LINES = 450
MAX_FUNCTION_LINES = 60
TYPED_API = re.compile(r"^(ApiClient|[A-Z]\w*Api)$")
AWS_SERVICES = ("autoscaling", "cloudwatch", "ec2", "eks", "ssm", "sts")
# One file per service in module_utils/aws/, beside the client factory (client.py) and the answers' shapes.
AWS_CALLS = frozenset("module_utils/aws/%s.py" % service
                      for service in ("autoscaling", "cloudwatch", "ec2", "eks", "elb", "elbv2", "ssm", "sts"))
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
    assert K8S_FACTORY in names and AWS_FACTORY in names and "module_utils/_drain/node.py" in names
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
    assert built == [], "%s builds %s; use module_utils/kube/client.py (core_v1, apps_v1, policy_v1, version_api)" % (
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
    assert not imported & {"boto3", "botocore"}, "%s imports boto3/botocore; use module_utils/aws/session.py" % name


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
    if name in AWS_CALLS:
        return
    calls = aws_operation_calls(ast.parse(path.read_text()))
    assert calls == [], "%s calls AWS directly (%s); add a function to module_utils/aws/<service>.py" % (
        name, ", ".join("line %d: %s" % call for call in calls))


@pytest.mark.parametrize("name, path", [(name, path) for name, path in sources() if name in AWS_CALLS])
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


MODULE_UTILS = "ansible_collections.eksops.nodegroup.plugins.module_utils"


def imported_utils(tree):
    """The module_utils modules a file imports, as paths under module_utils without .py: ``nodegroup/journal``
    (``from ...module_utils.nodegroup import journal`` and ``from ...module_utils.nodegroup.journal import x`` alike)."""
    found = set()
    for node in ast.walk(tree):
        if not isinstance(node, ast.ImportFrom) or not (node.module or "").startswith(MODULE_UTILS):
            continue
        package = node.module[len(MODULE_UTILS) + 1:].replace(".", "/")
        for alias in node.names:
            child = (package + "/" if package else "") + alias.name
            is_module = (PLUGINS / "module_utils" / (child + ".py")).exists()
            found.add(child if is_module else package)
    return found


def test_the_scan_finds_the_module_utils_a_file_imports():
    tree = ast.parse("from %s.nodegroup import journal as jr\nfrom %s.errors import UpgradeError\n"
                     "from %s._drain.api import KubeApi\nimport os\n" % (MODULE_UTILS, MODULE_UTILS, MODULE_UTILS))
    assert imported_utils(tree) == {"nodegroup/journal", "errors", "_drain/api"}


# host/'s files that the client factories use: the clients themselves, the job guard, the one clock and the one
# waiter shape (issue 26 item 5: everything that waits, from kube/watch.py up, may import them), and the request
# budgets every client paces its requests by (issue 28 item 4).
CLIENT_HOST = ("host/clients", "host/job_guard", "host/clock", "host/waiter", "host/request_budget")


def layer_of(name):
    """``module_utils/steps/asg_surge.py`` -> ``steps``; a client factory's layer is ``clients``."""
    path = name[len("module_utils/"):-len(".py")]
    if path.split("/")[0] in ("aws", "kube") or path in CLIENT_HOST:
        return "clients"
    return "drain" if path in ("drain",) or path.startswith("_drain/") else path.split("/")[0]


DOMAIN = frozenset(["nodegroup", "members", "managed", "drain", "plan", "gates"])
# What each layer may import besides itself and errors.py: the house read from the bottom up.
MAY_IMPORT = {
    "clients": frozenset(),
    "plan": frozenset(),
    "report": frozenset(["plan"]),
    "host": frozenset(["clients", "nodegroup"]),  # host/module.py gives its Clients the K4 proof
    "nodegroup": frozenset(["clients", "host"]) | DOMAIN,
    "members": frozenset(["clients", "host"]) | DOMAIN,
    "managed": frozenset(["clients", "host"]) | DOMAIN,
    "drain": frozenset(["clients", "host"]) | DOMAIN,
    "gates": frozenset(["clients", "host"]) | DOMAIN,
    "steps": frozenset(["clients", "host"]) | DOMAIN,
    "phases": frozenset(["clients", "host", "steps"]) | DOMAIN,
}
MODULE_UTILS_SOURCES = [(name, path) for name, path in sources()
                        if name.startswith("module_utils/") and name != "module_utils/errors.py"
                        and not name.endswith("__init__.py")]


def test_every_module_utils_file_has_a_layer():
    assert {layer_of(name) for name, _path in MODULE_UTILS_SOURCES} == set(MAY_IMPORT)


@pytest.mark.parametrize("name, path", MODULE_UTILS_SOURCES)
def test_no_layer_imports_one_above_it(name, path):
    layer = layer_of(name)
    allowed = MAY_IMPORT[layer] | {layer}
    wrong = sorted(used for used in imported_utils(ast.parse(path.read_text()))
                   if used != "errors" and layer_of("module_utils/%s.py" % used) not in allowed)
    assert wrong == [], "%s (%s) imports %s; it may import %s" % (name, layer, ", ".join(wrong), ", ".join(sorted(allowed)))


@pytest.mark.parametrize("name, path", sources())
def test_only_the_drain_facade_imports_the_drain_engine(name, path):
    if name == "module_utils/drain.py" or name.startswith("module_utils/_drain/"):
        return
    engine = sorted(used for used in imported_utils(ast.parse(path.read_text())) if used.startswith("_drain"))
    assert engine == [], "%s imports %s; use module_utils/drain.py" % (name, ", ".join(engine))


def test_no_two_module_utils_files_share_a_name():
    stems = {}
    for name, path in MODULE_UTILS_SOURCES:
        stems.setdefault(path.stem, []).append(name)
    assert {stem: names for stem, names in stems.items() if len(names) > 1} == {}


STEP_INTERFACE = frozenset(["run", "validate_params", "ARGUMENT_SPEC", "CONSTRAINTS"])


def public_names(tree):
    """The public functions and classes a file defines at its top level."""
    return {node.name for node in tree.body
            if isinstance(node, (ast.FunctionDef, ast.ClassDef)) and not node.name.startswith("_")}


def assigned_names(tree):
    """The names a file assigns at its top level."""
    return {target.id for node in tree.body if isinstance(node, (ast.Assign, ast.AnnAssign))
            for target in (node.targets if isinstance(node, ast.Assign) else [node.target])
            if isinstance(target, ast.Name)}


def test_no_public_function_or_class_is_defined_twice():
    defined = {}
    for name, path in MODULE_UTILS_SOURCES:
        if name in AWS_CALLS:
            continue  # named after the AWS operation each calls
        tree = ast.parse(path.read_text())
        names = public_names(tree)
        # A module's body (steps/, and the phases/ file of a module that runs a phase's code, which declares the
        # module's ARGUMENT_SPEC: workload_health, fleet_ring_health) is the interface its module or StepAction calls.
        module_body = name.startswith("module_utils/phases/") and "ARGUMENT_SPEC" in assigned_names(tree)
        if name.startswith("module_utils/steps/") or module_body:
            names -= STEP_INTERFACE
        for public in names:
            defined.setdefault(public, []).append(name)
    assert {public: names for public, names in defined.items() if len(names) > 1} == {}
