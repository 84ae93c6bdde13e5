"""EksopsModule: merged option specs, cached clients, UpgradeError -> fail_json with the U8 code."""

from __future__ import annotations

import json

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


def test_k8s_client_uses_the_module_user_agent(make, tmp_path):
    kubeconfig = tmp_path / "kubeconfig"
    kubeconfig.write_text(json.dumps({
        "apiVersion": "v1", "kind": "Config", "current-context": "c",
        "clusters": [{"name": "c", "cluster": {"server": "https://127.0.0.1:6443"}}],
        "users": [{"name": "u", "user": {"token": "t"}}],
        "contexts": [{"name": "c", "context": {"cluster": "c", "user": "u"}}]}))
    module = make(dict(AWS_ARGS, cluster_name="demo", kubeconfig=str(kubeconfig)), uses_k8s=True)
    assert module.k8s() is module.k8s()
    assert module.k8s().user_agent.startswith("eksops.nodegroup/")
    assert module.core_v1().api_client is module.k8s()
