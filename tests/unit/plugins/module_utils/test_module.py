"""EksopsModule: merged option specs, cached clients, UpgradeError -> fail_json with the U8 code."""

from __future__ import annotations

import json
import socket

import pytest

from ansible.module_utils.testing import patch_module_args

from ansible_collections.eksops.nodegroup.plugins.module_utils import module as module_utils
from ansible_collections.eksops.nodegroup.plugins.module_utils.errors import UpgradeError
from ansible_collections.eksops.nodegroup.plugins.module_utils.module import EksopsModule, error_result

AWS_ARGS = dict(region="us-west-2", access_key="AK", secret_key="SK")


@pytest.fixture
def make():
    """An EksopsModule for these args; the args stay patched in until the test ends (exit_json needs them)."""
    patches = []

    def build(args, **kwargs):
        patch = patch_module_args(args)
        patch.__enter__()
        patches.append(patch)
        return EksopsModule(dict(cluster_name=dict(type="str", required=True)), supports_check_mode=True, **kwargs)

    yield build
    for patch in reversed(patches):
        patch.__exit__(None, None, None)


def finish(fn, capsys):
    with pytest.raises(SystemExit):
        fn()
    return json.loads(capsys.readouterr().out)


def test_specs_are_merged_as_asked():
    assert set(module_utils.merged_argument_spec({}, uses_aws=True)) >= {"region", "endpoint_url"}
    assert "kubeconfig" not in module_utils.merged_argument_spec({}, uses_aws=True)
    both = module_utils.merged_argument_spec({"region": {"type": "str", "required": True}}, True, True)
    assert both["region"] == {"type": "str", "required": True} and "context" in both
    assert set(module_utils.merged_argument_spec({}, uses_aws=False, uses_k8s=False)) == set()


def test_run_returns_the_result(make, capsys):
    module = make(dict(AWS_ARGS, cluster_name="demo"))
    result = finish(lambda: module.run(lambda: {"changed": False, "thing": {"a": 1}}), capsys)
    assert (result["changed"], result["thing"]) == (False, {"a": 1})


def test_run_turns_upgrade_errors_into_failures_with_the_code(make, capsys):
    module = make(dict(AWS_ARGS, cluster_name="demo"))

    def fail():
        raise UpgradeError("PodEvictionFailure", "pods stayed", node="n1", failed="shadow", changed=True)

    result = finish(lambda: module.run(fail), capsys)
    assert result["failed"] is True
    assert (result["msg"], result["code"], result["node"]) == ("pods stayed", "PodEvictionFailure", "n1")
    assert (result["error_failed"], result["error_changed"]) == ("shadow", True)


def test_fail_upgrade_keeps_what_was_done(make, capsys):
    module = make(dict(AWS_ARGS, cluster_name="demo"))
    result = finish(lambda: module.fail_upgrade(UpgradeError("AccessDenied", "no"), changed=True, step=2), capsys)
    assert (result["changed"], result["step"], result["code"]) == (True, 2, "AccessDenied")


def test_error_result():
    assert error_result(UpgradeError("InvalidParameter", "bad", parameter="x")) == dict(
        msg="bad", code="InvalidParameter", parameter="x")


def test_clients_are_cached_and_delegation_works(make):
    module = make(dict(AWS_ARGS, cluster_name="demo", _ansible_check_mode=True))
    assert module.aws("ec2") is module.aws("ec2")
    assert module.aws("ec2") is not module.aws("autoscaling")
    assert module.check_mode is True
    assert module.params["cluster_name"] == "demo"


def write_kubeconfig(tmp_path, server):
    kubeconfig = tmp_path / "kubeconfig"
    kubeconfig.write_text(json.dumps({
        "apiVersion": "v1", "kind": "Config", "current-context": "c",
        "clusters": [{"name": "c", "cluster": {"server": server}}],
        "users": [{"name": "u", "user": {"token": "t"}}],
        "contexts": [{"name": "c", "context": {"cluster": "c", "user": "u"}}]}))
    return str(kubeconfig)


def test_k8s_client_uses_the_module_user_agent_and_probes_the_api_once(make, tmp_path, monkeypatch):
    probes = []
    monkeypatch.setattr(module_utils.VersionApi, "get_code", lambda api: probes.append(api.api_client))
    kubeconfig = write_kubeconfig(tmp_path, "https://127.0.0.1:6443")
    module = make(dict(AWS_ARGS, cluster_name="demo", kubeconfig=kubeconfig), uses_k8s=True)
    assert module.k8s() is module.k8s()
    assert module.k8s().user_agent.startswith("eksops.nodegroup/")
    assert module.core_v1().api_client is module.k8s()
    assert probes == [module.k8s()]


def test_unreachable_api_fails_at_first_contact_as_cluster_unreachable(make, tmp_path, monkeypatch):
    """U8 ClusterUnreachable, within the first-contact window instead of the long retry window."""
    monkeypatch.setattr(module_utils, "FIRST_CONTACT_RETRY_SECONDS", 0)
    with socket.socket() as sock:  # a port nothing listens on
        sock.bind(("127.0.0.1", 0))
        closed = sock.getsockname()[1]
    kubeconfig = write_kubeconfig(tmp_path, "http://127.0.0.1:%d" % closed)
    module = make(dict(AWS_ARGS, cluster_name="demo", kubeconfig=kubeconfig), uses_k8s=True)
    with pytest.raises(UpgradeError) as raised:
        module.k8s()
    assert raised.value.code == "ClusterUnreachable"
    assert str(closed) in raised.value.msg
