# -*- coding: utf-8 -*-
# Copyright: Contributors to the eksops.nodegroup project
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Issue 10 item 15: docs/iam-policy.json and docs/rbac.yaml grant what the collection's code can call, no more and
no less.

Both sides are read from the source, statically, so a permission cannot drift from the code:

- AWS: the services are those the code creates clients for (a string literal given to ``module.aws(...)``,
  ``aws_client(..., "svc")`` or ``session.client(...)``); an API call is any attribute named after one of those
  services' operations (botocore's service model, ``xform_name`` of the operation name) and any operation name
  given to ``paginate``/``get_paginator``/``get_waiter``/``generate_presigned_url``. When two services share an
  operation name (``delete_tags``), the receiver says which: a variable named after the service or bound to
  ``module.aws("<service>")``. The IAM action is ``<signing name>:<OperationName>``, plus the dependent actions
  AWS documents for a call (DEPENDENT_ACTIONS), minus what needs no permission (NO_PERMISSION_NEEDED).
- Kubernetes: the API classes are those the code instantiates (``CoreV1Api(...)``); a call is any attribute named
  after one of their operations; the kubernetes client itself says which HTTP method and path each operation
  uses, hence the verb and the resource; a list operation handed to ``list_then_watch`` is also watched.

A failure prints what to add and what to remove, with the code locations that need each permission.
"""

from __future__ import annotations

import ast
import inspect
import json
import pathlib
import re

import botocore.session
import kubernetes.client
import pytest
import yaml
from botocore import xform_name

from ansible_collections.eksops.nodegroup.plugins.module_utils.nodegroup.journal import TAG_PREFIX

ROOT = pathlib.Path(__file__).resolve().parents[3]
PLUGINS = ROOT / "plugins"
POLICY_PATH = ROOT / "docs" / "iam-policy.json"
RBAC_PATH = ROOT / "docs" / "rbac.yaml"
PERMISSIONS_DOC = ROOT / "docs" / "permissions.md"

# Calls that create a botocore client; the service is a string literal argument.
CLIENT_FACTORIES = frozenset(["aws", "aws_client", "client"])
# Calls that take an operation (or waiter) name as a string argument; for ``paginate`` the client is the first
# argument (module_utils.aws_shapes.paginate), for the others the object the method is called on.
OPERATION_NAME_CALLS = frozenset(["paginate", "get_paginator", "can_paginate", "generate_presigned_url", "get_waiter"])
# Calls that watch the list operation given as first argument (kube/watch.py, host/waiter.py's Waiter, kubernetes.watch).
WATCH_CALLS = frozenset(["list_then_watch"])

# Actions AWS checks on top of a call the code makes, when the call passes one of the keywords (None: always).
# Each with the documentation that says so.
DEPENDENT_ACTIONS = [
    ("autoscaling:UpdateAutoScalingGroup", frozenset(["LaunchTemplate", "MixedInstancesPolicy"]), {
        "ec2:RunInstances": "checked when a group is updated with a launch template (EC2 Auto Scaling user guide, "
                            "'Control Amazon EC2 launch template usage in Auto Scaling groups')",
        "iam:PassRole": "the launch template names an instance profile, as every node's does (same page; the Service "
                        "Authorization Reference lists iam:PassRole as a dependent action of UpdateAutoScalingGroup)",
        "ec2:CreateTags": "the launch template has tag specifications, as eksctl's and terraform-aws-eks's do "
                          "(EC2 Auto Scaling user guide, 'Amazon EC2 Auto Scaling API permissions')",
    }),
    ("ec2:DescribeLaunchTemplateVersions", frozenset(["ResolveAlias"]), {
        "ssm:GetParameters": "to resolve an AMI given as an SSM parameter "
                             "(Service Authorization Reference, Amazon EC2)",
    }),
]
# Calls (or presigned URLs) that no IAM permission is required for; the policy must not list them.
NO_PERMISSION_NEEDED = {
    "sts:GetCallerIdentity": "STS API reference, GetCallerIdentity: 'No permissions are required to perform this "
                             "operation' (the EKS token is a presigned GetCallerIdentity URL)",
}
# Non-resource URLs every authenticated identity may GET through the default ClusterRole system:public-info-viewer;
# docs/rbac.yaml need not grant them.
PUBLIC_NON_RESOURCE_URLS = frozenset(["/version", "/version/", "/healthz", "/livez", "/readyz"])

PLACEHOLDERS = {
    "Partition": "aws-us-gov",
    "Region": "us-gov-west-1",
    "Account": "123456789012",
    "ClusterName": "prod",
    "LaunchTemplateId": "lt-0123456789abcdef0",
    "NodeRoleName": "prod-workers-node-role",
    "RoleAccount": "210987654321",
    "InventoryRoleName": "eks-fleet-inventory",
}
PLACEHOLDER_RE = re.compile(r"\$\{([A-Za-z]+)\}")
READ_PREFIXES = ("Describe", "List", "Get")
K8S_VERBS_BY_METHOD = {"GET": "get", "POST": "create", "PUT": "update", "PATCH": "patch", "DELETE": "delete"}


# Where a service's IAM action prefix is not its SigV4 signing name: CloudWatch signs as "monitoring" (botocore's
# model) and its actions are "cloudwatch:..." (Service Authorization Reference, "Actions, resources, and condition
# keys for Amazon CloudWatch": service prefix cloudwatch).
IAM_PREFIX_OF_SIGNING_NAME = {"monitoring": "cloudwatch"}


class Site:
    """One place in plugins/ that needs a permission."""

    def __init__(self, path, node, what):
        self.where = "%s:%d" % (path.relative_to(ROOT) if path.is_relative_to(ROOT) else path, node.lineno)
        self.what = what

    def __str__(self):
        return "%s %s" % (self.where, self.what)


def call_name(node):
    """The name a call is made by: ``f(...)`` -> f, ``x.f(...)`` -> f."""
    func = node.func
    if isinstance(func, ast.Name):
        return func.id
    if isinstance(func, ast.Attribute):
        return func.attr
    return None


def last_segment(expr):
    """``x`` -> x, ``self.a.x`` -> x, without leading underscores; None for anything else."""
    if isinstance(expr, ast.Name):
        return expr.id.lstrip("_")
    if isinstance(expr, ast.Attribute):
        return expr.attr.lstrip("_")
    return None


def string_args(node):
    return [arg.value for arg in node.args if isinstance(arg, ast.Constant) and isinstance(arg.value, str)]


class Source:
    """plugins/, parsed once: every file's tree, what each file imports, every function and assignment."""

    def __init__(self, root):
        self.files = []
        self.imported = {}
        self.functions = {}
        self.assigned = {}
        for path in sorted(root.rglob("*.py")):
            tree = ast.parse(path.read_text(encoding="utf-8"), filename=str(path))
            self.files.append((path, tree))
            self.imported[path] = set()
            for node in ast.walk(tree):
                if isinstance(node, (ast.Import, ast.ImportFrom)):
                    self.imported[path].update((alias.asname or alias.name).split(".")[0] for alias in node.names)
                elif isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
                    self.functions.setdefault(node.name, []).append(node)
                elif isinstance(node, ast.Assign):
                    for target in node.targets:
                        self.record_assignment(target, node.value)

    def record_assignment(self, target, value):
        if isinstance(target, ast.Tuple) and isinstance(value, ast.Tuple) and len(target.elts) == len(value.elts):
            for one_target, one_value in zip(target.elts, value.elts):
                self.record_assignment(one_target, one_value)
            return
        key = last_segment(target)
        if key:
            self.assigned.setdefault(key, []).append(value)

    def walk(self):
        for path, tree in self.files:
            for node in ast.walk(tree):
                yield path, node

    def is_module_reference(self, path, expr):
        """``asg_ops.suspend_processes``: a function of an imported module, not an API call."""
        return isinstance(expr, ast.Name) and expr.id in self.imported[path]

    def resolve(self, expr, direct, depth=0):
        """What ``direct(expr)`` says of ``expr``, else of what the variable it names was assigned (set of answers)."""
        answer = direct(expr)
        if answer:
            return {answer}
        key = last_segment(expr)
        if depth > 4 or not key or key not in self.assigned:
            return set()
        found = set()
        for value in self.assigned[key]:
            found |= self.resolve(value, direct, depth + 1)
        return found


# --- AWS --------------------------------------------------------------------------------------------------------

class AwsModel:
    """The operations of the services the code creates clients for, from botocore's models."""

    def __init__(self, source):
        session = botocore.session.get_session()
        available = set(session.get_available_services())
        self.services = set()
        for _path, node in source.walk():
            if isinstance(node, ast.Call) and call_name(node) in CLIENT_FACTORIES:
                self.services.update(name for name in string_args(node) if name in available)
        self.models = dict((service, session.get_service_model(service)) for service in self.services)
        self.operations = dict((service, dict((xform_name(name), name) for name in model.operation_names))
                               for service, model in self.models.items())
        self.waiters = {}
        for service in self.services:
            try:
                waiter_model = session.get_waiter_model(service)
            except Exception:  # pylint: disable=broad-except
                continue  # a service without waiters
            for name in waiter_model.waiter_names:
                self.waiters.setdefault(service, {})[xform_name(name)] = waiter_model.get_waiter(name).operation

    def action(self, service, operation):
        signing_name = self.models[service].signing_name
        return "%s:%s" % (IAM_PREFIX_OF_SIGNING_NAME.get(signing_name, signing_name), operation)

    def services_with(self, method):
        return sorted(service for service, operations in self.operations.items() if method in operations)

    def service_named_by(self, expr):
        """The service of a receiver: ``module.aws("ec2")``, or a name like ``autoscaling`` / ``eks_client``."""
        if isinstance(expr, ast.Call) and call_name(expr) in CLIENT_FACTORIES:
            services = [name for name in string_args(expr) if name in self.services]
            return services[0] if services else None
        key = last_segment(expr)
        if key:
            key = key[:-len("_client")] if key.endswith("_client") else key
            if key in self.services:
                return key
        return None


class AwsCalls:
    """Every AWS API action plugins/ can call, where, and with which keywords."""

    def __init__(self, source, model):
        self.model = model
        self.source = source
        self.sites = {}
        self.keywords = {}
        self.unresolved = []
        called = set()
        # ast.walk visits a call before the attribute it calls: that one is counted once, with its keywords.
        for path, node in source.walk():
            if isinstance(node, ast.Call):
                called.add(id(node.func))
                self.call(path, node)
            elif isinstance(node, ast.Attribute) and isinstance(node.ctx, ast.Load) and id(node) not in called:
                self.attribute(path, node, node.attr, node.value)

    def service_of(self, receiver, candidates):
        found = self.source.resolve(receiver, self.model.service_named_by) & set(candidates)
        return found.pop() if len(found) == 1 else None

    def record(self, path, node, service, operation, what):
        action = self.model.action(service, operation)
        self.sites.setdefault(action, []).append(Site(path, node, what))
        return action

    def attribute(self, path, node, method, receiver, keywords=()):
        candidates = self.model.services_with(method)
        if not candidates or self.source.is_module_reference(path, receiver):
            return
        service = self.service_of(receiver, candidates)
        if service is None and method in self.source.functions:
            return  # the collection's own function of that name, on an object that is no client
        if service is None and len(candidates) == 1:
            service = candidates[0]
        if service is None:
            self.unresolved.append(Site(path, node, "%s.%s: an operation of %s; name the client after its service"
                                        % (ast.unparse(receiver), method, " and ".join(candidates))))
            return
        action = self.record(path, node, service, self.model.operations[service][method],
                             "%s.%s" % (ast.unparse(receiver), method))
        self.keywords.setdefault(action, set()).update(keywords)

    def call(self, path, node):
        name = call_name(node)
        if isinstance(node.func, ast.Attribute):
            method = node.func.attr
            if self.model.services_with(method):
                keywords = [keyword.arg for keyword in node.keywords if keyword.arg]
                self.attribute(path, node, method, node.func.value, keywords)
        if name == "getattr" and len(node.args) >= 2 and isinstance(node.args[1], ast.Constant):
            self.attribute(path, node, str(node.args[1].value), node.args[0])
        if name not in OPERATION_NAME_CALLS:
            return
        if name == "paginate":
            receiver = node.args[0] if node.args else None
        else:
            receiver = node.func.value if isinstance(node.func, ast.Attribute) else None
        for value in string_args(node):
            if name == "get_waiter":
                candidates = sorted(service for service, waiters in self.model.waiters.items() if value in waiters)
            else:
                candidates = self.model.services_with(value)
            if not candidates:
                continue
            service = self.service_of(receiver, candidates) if receiver is not None else None
            if service is None and len(candidates) == 1:
                service = candidates[0]
            if service is None:
                self.unresolved.append(Site(path, node, "%s(%r): which service's?" % (name, value)))
                continue
            operation = (self.model.waiters[service][value] if name == "get_waiter"
                         else self.model.operations[service][value])
            self.record(path, node, service, operation, "%s(%r)" % (name, value))

    def needed(self):
        """{action: [why]} of everything the policy must allow."""
        needed = dict((action, [str(site) for site in sites]) for action, sites in self.sites.items())
        for trigger, keywords, dependents in DEPENDENT_ACTIONS:
            if trigger in self.sites and (keywords is None or keywords & self.keywords.get(trigger, set())):
                for dependent, reason in dependents.items():
                    needed.setdefault(dependent, []).append("needed by %s: %s" % (trigger, reason))
        for action in NO_PERMISSION_NEEDED:
            needed.pop(action, None)
        return needed


# --- Kubernetes -------------------------------------------------------------------------------------------------

def operation_route(api_class, method):
    """(HTTP method, path) of a kubernetes client operation, read from the client's own code (old and new
    generators: ``call_api('/path', 'GET', ...)`` or ``param_serialize(method='GET', resource_path='/path')``)."""
    sources = []
    for name in (method + "_with_http_info", "_%s_serialize" % method):
        if hasattr(api_class, name):
            sources.append(inspect.getsource(getattr(api_class, name)))
    text = "\n".join(sources)
    match = re.search(r"method='([A-Z]+)',\s*resource_path='([^']+)'", text)
    if match:
        return match.group(1), match.group(2)
    match = re.search(r"call_api\(\s*'([^']+)',\s*'([A-Z]+)'", text)
    if match:
        return match.group(2), match.group(1)
    raise AssertionError("cannot read the HTTP method and path of %s.%s" % (api_class.__name__, method))


def rbac_of_route(http_method, path):
    """(apiGroup, resource[/subresource], verb) of a request, or (None, path, verb) for a non-resource URL."""
    parts = [part for part in path.split("/") if part]
    if parts[:2] == ["api", "v1"]:
        group, rest = "", parts[2:]
    elif parts[:1] == ["apis"] and len(parts) >= 3:
        group, rest = parts[1], parts[3:]
    else:
        return None, path, K8S_VERBS_BY_METHOD[http_method]
    if len(rest) >= 3 and rest[0] == "namespaces" and rest[1] == "{namespace}":
        rest = rest[2:]
    resource = rest[0]
    named = len(rest) >= 2
    if len(rest) >= 3:
        resource += "/" + rest[2]
    verb = K8S_VERBS_BY_METHOD[http_method]
    if http_method == "GET" and not named:
        verb = "list"
    elif http_method == "DELETE" and not named:
        verb = "deletecollection"
    return group, resource, verb


def called_name(node):
    """The name a call calls (``f(...)`` or ``x.f(...)``: f), or None for anything else."""
    if not isinstance(node, ast.Call):
        return None
    if isinstance(node.func, ast.Name):
        return node.func.id
    return node.func.attr if isinstance(node.func, ast.Attribute) else None


class KubeModel:
    """The operations of the kubernetes API classes the code instantiates."""

    def __init__(self, source):
        self.classes = {}
        for _path, node in source.walk():
            # ``CoreV1Api(client)``, or ``_client().CoreV1Api(client)`` (kube/client.py imports the client at first use).
            name = called_name(node)
            api_class = getattr(kubernetes.client, name, None) if name else None
            if inspect.isclass(api_class) and name.endswith("Api") and name != "ApiClient":
                self.classes[name] = api_class
        self.operations = dict((name, set(method for method in dir(api_class) if not method.startswith("_")
                                          and hasattr(api_class, method + "_with_http_info")))
                               for name, api_class in self.classes.items())

    def classes_with(self, method):
        return sorted(name for name, operations in self.operations.items() if method in operations)

    def class_named_by(self, expr):
        """The API class of a receiver: ``CoreV1Api(client)``, or a name like ``core_v1`` / ``policy``."""
        if called_name(expr) in self.classes:
            return called_name(expr)
        key = last_segment(expr)
        for name in self.classes:
            snake = xform_name(name)[:-len("_api")]
            if key in (snake, snake.split("_v")[0]):
                return name
        return None


class KubeCalls:
    """Every Kubernetes request plugins/ can make: {(apiGroup, resource, verb): [where]}."""

    def __init__(self, source, model):
        self.source = source
        self.model = model
        self.methods = {}
        self.grants = {}
        self.unresolved = []
        for path, node in source.walk():
            if isinstance(node, ast.Attribute) and isinstance(node.ctx, ast.Load):
                self.attribute(path, node)
            elif isinstance(node, ast.Call) and call_name(node) == "call_api":
                self.raw_call(path, node)
        for path, tree in source.files:
            self.watches(path, tree)

    def attribute(self, path, node):
        method, receiver = node.attr, node.value
        candidates = self.model.classes_with(method)
        if not candidates or self.source.is_module_reference(path, receiver):
            return
        found = self.source.resolve(receiver, self.model.class_named_by) & set(candidates)
        name = found.pop() if len(found) == 1 else None
        if name is None and method in self.source.functions:
            return  # the collection's own function of that name (e.g. a wrapper), on an object that is no API
        if name is None and len(candidates) == 1:
            name = candidates[0]
        if name is None:
            self.unresolved.append(Site(path, node, "%s.%s: an operation of %s; name the API object after its class"
                                        % (ast.unparse(receiver), method, " and ".join(candidates))))
            return
        self.methods.setdefault(method, name)
        http_method, route = operation_route(self.model.classes[name], method)
        self.grant(rbac_of_route(http_method, route), Site(path, node, "%s.%s" % (name, method)))

    def grant(self, triple, site):
        self.grants.setdefault(triple, []).append(str(site))

    def raw_call(self, path, node):
        """``api_client.call_api('/api/v1/nodes', 'GET', ...)``: the path and method must be literals."""
        literals = string_args(node)
        if len(literals) >= 2 and literals[1] in K8S_VERBS_BY_METHOD:
            site = Site(path, node, "call_api %s %s" % tuple(literals[:2]))
            self.grant(rbac_of_route(literals[1], literals[0]), site)
        else:
            self.unresolved.append(Site(path, node, "call_api without a literal path and method"))

    def watched(self, expr, function, seen):
        """The list operations a watch helper's first argument can be (None when it cannot be told)."""
        if isinstance(expr, ast.Attribute):
            if expr.attr in self.methods or self.model.classes_with(expr.attr):
                return {expr.attr}
            found = set()
            for definition in self.source.functions.get(expr.attr, []):
                if id(definition) in seen:
                    continue
                seen.add(id(definition))
                for node in ast.walk(definition):
                    if isinstance(node, ast.Return) and node.value is not None:
                        found |= self.watched(node.value, definition, seen) or set()
            return found or None
        if isinstance(expr, ast.Name) and function is not None:
            found = set()
            for node in ast.walk(function):
                targets = node.targets if isinstance(node, ast.Assign) else []
                if any(isinstance(target, ast.Name) and target.id == expr.id for target in targets):
                    found |= self.watched(node.value, function, seen) or set()
            return found or None
        if isinstance(expr, ast.Call):
            found = set()
            for part in [expr.func] + list(expr.args):
                found |= self.watched(part, function, seen) or set()
            return found or None
        if isinstance(expr, ast.Lambda):
            return self.watched(expr.body, function, seen)
        return None

    def watches(self, path, tree):
        done = set()
        # innermost function first, so a name is looked up where it is assigned
        functions = [node for node in ast.walk(tree) if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef))]
        for function in reversed(functions):
            for node in ast.walk(function):
                if not (isinstance(node, ast.Call) and call_name(node) in WATCH_CALLS and node.args):
                    continue
                if id(node) in done:
                    continue
                done.add(id(node))
                if function.name in WATCH_CALLS and isinstance(node.args[0], ast.Name) \
                        and node.args[0].id in {arg.arg for arg in function.args.args}:
                    continue  # a forwarder (host/waiter.py's Waiter.list_then_watch): its callers are the sites
                site = Site(path, node, "%s(%s)" % (call_name(node), ast.unparse(node.args[0])))
                methods = self.watched(node.args[0], function, set())
                if not methods:
                    self.unresolved.append(Site(path, node, "%s: cannot tell which list operation is watched"
                                                % site.what))
                    continue
                for method in methods:
                    name = self.methods.get(method) or (self.model.classes_with(method) or [None])[0]
                    http_method, route = operation_route(self.model.classes[name], method)
                    group, resource, verb = rbac_of_route(http_method, route)
                    assert verb == "list", "%s watches %s, which is no list operation" % (site, method)
                    self.grant((group, resource, "watch"), site)


# --- what the documents grant -----------------------------------------------------------------------------------

def load_policy():
    with POLICY_PATH.open(encoding="utf-8") as handle:
        return json.load(handle)


def as_list(value):
    return [value] if isinstance(value, str) else list(value or [])


def allowed_actions(policy):
    actions = {}
    for statement in policy["Statement"]:
        for action in as_list(statement.get("Action")):
            actions.setdefault(action, []).append(statement.get("Sid", "?"))
    return actions


def load_rbac():
    with RBAC_PATH.open(encoding="utf-8") as handle:
        documents = [document for document in yaml.safe_load_all(handle) if document]
    objects = []
    for document in documents:
        objects.extend(document["items"] if document.get("kind") == "List" else [document])
    return objects


def granted_triples(cluster_role):
    granted = set()
    for rule in cluster_role["rules"]:
        for verb in rule["verbs"]:
            for url in rule.get("nonResourceURLs", []):
                granted.add((None, url, verb))
            for group in rule.get("apiGroups", []):
                for resource in rule.get("resources", []):
                    granted.add((group, resource, verb))
    return granted


def difference_report(title, needed, granted, add_hint, remove_hint):
    """A readable diff: what to add (with why) and what to remove."""
    missing = sorted(set(needed) - set(granted), key=str)
    dead = sorted(set(granted) - set(needed), key=str)
    if not missing and not dead:
        return None
    lines = [title]
    if missing:
        lines.append("  needed by the code but not granted (%s):" % add_hint)
        for item in missing:
            lines.append("    + %s" % (item,))
            lines.extend("        %s" % why for why in needed[item][:5])
    if dead:
        lines.append("  granted but never used by the code (%s):" % remove_hint)
        lines.extend("    - %s" % (item,) for item in dead)
    return "\n".join(lines)


@pytest.fixture(scope="module")
def source():
    return Source(PLUGINS)


@pytest.fixture(scope="module")
def aws_calls(source):
    return AwsCalls(source, AwsModel(source))


@pytest.fixture(scope="module")
def kube_calls(source):
    return KubeCalls(source, KubeModel(source))


# --- the tests --------------------------------------------------------------------------------------------------

def test_item15_the_scan_finds_the_clients_and_calls_it_must(aws_calls, kube_calls):
    """The static scan itself: it sees the clients and a few calls every upgrade makes, and every call it found
    is attributed to one service or API class (else a permission could hide behind it)."""
    assert {"autoscaling", "ec2", "eks", "ssm", "sts"} <= aws_calls.model.services
    assert {"autoscaling:DescribeAutoScalingGroups", "autoscaling:UpdateAutoScalingGroup",
            "ec2:CreateLaunchTemplateVersion", "eks:DescribeCluster"} <= set(aws_calls.sites)
    assert {"CoreV1Api", "PolicyV1Api", "AppsV1Api"} <= set(kube_calls.model.classes)
    assert ("", "pods/eviction", "create") in kube_calls.grants
    assert ("", "nodes", "watch") in kube_calls.grants
    unresolved = [str(site) for site in aws_calls.unresolved + kube_calls.unresolved]
    assert not unresolved, "calls the permission scan cannot attribute:\n  " + "\n  ".join(unresolved)


SAMPLE_PLUGIN = """
from ansible_collections.eksops.nodegroup.plugins.module_utils import helpers


def upgrade(module, client, core_v1, other):
    ec2 = module.aws("ec2")
    autoscaling = module.aws("autoscaling")
    autoscaling.delete_tags(Tags=[])
    ec2.delete_tags(Resources=["i-1"])
    paginate(ec2, "describe_instances", "Reservations")
    ec2.get_waiter("instance_terminated")
    helpers.describe_images(ec2)
    other.delete_tags()
    list_then_watch(core_v1.list_node, timeout=1)
    CoreV1Api(client).read_namespaced_pod("name", "namespace")


def describe_images(ec2):
    return ec2
"""


def test_item15_the_scan_attributes_calls_by_receiver_and_skips_the_collections_own_functions(tmp_path):
    (tmp_path / "sample.py").write_text(SAMPLE_PLUGIN, encoding="utf-8")
    sample = Source(tmp_path)
    aws = AwsCalls(sample, AwsModel(sample))
    assert set(aws.sites) == {"autoscaling:DeleteTags", "ec2:DeleteTags", "ec2:DescribeInstances"}
    assert [site.what for site in aws.unresolved] == [
        "other.delete_tags: an operation of autoscaling and ec2; name the client after its service"]
    kube = KubeCalls(sample, KubeModel(sample))
    assert set(kube.grants) == {("", "nodes", "list"), ("", "nodes", "watch"), ("", "pods", "get")}


def test_item15_iam_policy_allows_exactly_the_actions_the_code_calls(aws_calls):
    needed = aws_calls.needed()
    allowed = allowed_actions(load_policy())
    report = difference_report("docs/iam-policy.json and plugins/ disagree:", needed, allowed,
                               "add to docs/iam-policy.json", "a dead permission: remove it, or find the call")
    assert report is None, report
    listed = sorted(set(allowed) & set(NO_PERMISSION_NEEDED))
    assert not listed, "needs no permission, do not list it: %s" % [
        "%s (%s)" % (action, NO_PERMISSION_NEEDED[action]) for action in listed]


def test_item15_iam_policy_is_valid_json_with_documented_placeholders():
    policy = load_policy()
    assert policy["Version"] == "2012-10-17"
    text = POLICY_PATH.read_text(encoding="utf-8")
    used = set(PLACEHOLDER_RE.findall(text))
    assert used <= set(PLACEHOLDERS), "undocumented placeholders: %s" % sorted(used - set(PLACEHOLDERS))
    assert "arn:aws:" not in text, "the partition is written in: use arn:${Partition}:"
    filled = PLACEHOLDER_RE.sub(lambda match: PLACEHOLDERS[match.group(1)], text)
    assert "${" not in filled
    filled_policy = json.loads(filled)
    for statement in filled_policy["Statement"]:
        assert statement["Effect"] == "Allow" and "NotAction" not in statement and "NotResource" not in statement
        for action in as_list(statement["Action"]):
            assert "*" not in action, "list actions one by one, no wildcard: %s" % action
        for resource in as_list(statement["Resource"]):
            assert resource == "*" or resource.startswith("arn:aws-us-gov:"), resource
    sids = [statement["Sid"] for statement in policy["Statement"]]
    assert len(sids) == len(set(sids))


def statements_allowing(policy, action):
    return [statement for statement in policy["Statement"] if action in as_list(statement["Action"])]


def test_item15_iam_policy_scopes_every_write():
    policy = load_policy()
    for statement in policy["Statement"]:
        for action in as_list(statement["Action"]):
            if action.split(":")[1].startswith(READ_PREFIXES):
                continue
            assert as_list(statement["Resource"]) != ["*"] or statement.get("Condition"), (
                "%s (%s) is allowed on every resource without a condition" % (action, statement["Sid"]))
    cluster_tag = "autoscaling:ResourceTag/kubernetes.io/cluster/${ClusterName}"
    autoscaling_writes = [action for action in allowed_actions(policy)
                          if action.startswith("autoscaling:") and not action.split(":")[1].startswith(READ_PREFIXES)]
    assert autoscaling_writes
    for action in autoscaling_writes:
        for statement in statements_allowing(policy, action):
            null = statement.get("Condition", {}).get("Null", {})
            # the cluster's own groups only, and never a managed node group's (SPEC K3: EKS owns those)
            assert null.get(cluster_tag) == "false", (action, statement["Sid"])
            assert null.get("autoscaling:ResourceTag/eks:cluster-name") == "true", (action, statement["Sid"])
    for action in ("autoscaling:CreateOrUpdateTags", "autoscaling:DeleteTags"):
        for statement in statements_allowing(policy, action):
            keys = statement["Condition"]["ForAllValues:StringLike"]["aws:TagKeys"]
            assert as_list(keys) == [TAG_PREFIX + "*"], "the journal's tags only (%s*)" % TAG_PREFIX
    for statement in statements_allowing(policy, "iam:PassRole"):
        assert "ec2.amazonaws.com" in as_list(statement["Condition"]["StringEquals"]["iam:PassedToService"])
        assert all(resource.endswith(":role/${NodeRoleName}") for resource in as_list(statement["Resource"]))
    for action in ("ec2:CreateLaunchTemplateVersion", "ec2:ModifyLaunchTemplate"):
        for statement in statements_allowing(policy, action):
            assert all("launch-template/${LaunchTemplateId}" in r for r in as_list(statement["Resource"])), action
    for statement in statements_allowing(policy, "ec2:RunInstances"):
        assert statement["Condition"]["ArnLike"]["ec2:LaunchTemplate"].endswith("launch-template/${LaunchTemplateId}")
    for statement in statements_allowing(policy, "ec2:CreateTags"):
        assert statement["Condition"]["StringEquals"]["ec2:CreateAction"] == "RunInstances"


def test_item15_rbac_grants_exactly_the_requests_the_code_makes(kube_calls):
    objects = load_rbac()
    [role] = [obj for obj in objects if obj["kind"] == "ClusterRole"]
    [binding] = [obj for obj in objects if obj["kind"] == "ClusterRoleBinding"]
    assert binding["roleRef"] == {"apiGroup": "rbac.authorization.k8s.io", "kind": "ClusterRole",
                                  "name": role["metadata"]["name"]}
    needed = dict((triple, sites) for triple, sites in kube_calls.grants.items()
                  if not (triple[0] is None and triple[1] in PUBLIC_NON_RESOURCE_URLS and triple[2] == "get"))
    report = difference_report("docs/rbac.yaml and plugins/ disagree ((apiGroup, resource, verb)):", needed,
                               granted_triples(role), "add to the ClusterRole", "remove it, or find the call")
    assert report is None, report


def test_item15_the_permissions_page_explains_every_placeholder_and_partition():
    text = PERMISSIONS_DOC.read_text(encoding="utf-8")
    for name in PLACEHOLDERS:
        assert "${%s}" % name in text, "docs/permissions.md does not explain ${%s}" % name
    for partition in ("aws-us-gov", "aws-cn"):
        assert partition in text
