# -*- coding: utf-8 -*-
# Copyright: Contributors to the eksops.nodegroup project
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""EksopsModule: merged option specs, cached clients, UpgradeError -> fail_json with the U8 code."""

from __future__ import annotations

import json
import socket

import pytest

from ..module_args import patch_module_args
from kubernetes.client import VersionApi

from ansible_collections.eksops.nodegroup.plugins.module_utils.host import module as module_utils
from ansible_collections.eksops.nodegroup.plugins.module_utils.errors import UpgradeError
from ansible_collections.eksops.nodegroup.plugins.module_utils.host.module import EksopsModule, error_result

from ..fakes import FakeApiServer, FakeClock, FakeCoreV1

AWS_ARGS = dict(region="us-west-2", access_key="AK", secret_key="SK")


@pytest.fixture
def seams():
    """EksopsModule keywords every module a test makes gets (fixtures such as ``aws`` set them)."""
    return {}


@pytest.fixture
def make(seams):
    """An EksopsModule for these args; the args stay patched in until the test ends (exit_json needs them)."""
    patches = []

    def build(args, spec=None, **kwargs):
        patch = patch_module_args(args)
        patch.__enter__()
        patches.append(patch)
        return EksopsModule(spec or dict(cluster_name=dict(type="str", required=True)), supports_check_mode=True,
                            **dict(seams, **kwargs))

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


@pytest.mark.parametrize("diff_mode", [True, False])
def test_with_diff_sets_the_diff_in_diff_mode_only(make, diff_mode):
    module = make(dict(AWS_ARGS, cluster_name="demo", _ansible_diff=diff_mode))
    result = dict(changed=True)
    assert module.with_diff(result, before=dict(size=1), after=dict(size=2)) is result
    assert result == (dict(changed=True, diff=dict(before=dict(size=1), after=dict(size=2))) if diff_mode
                      else dict(changed=True))


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


EKS_ENDPOINT = "https://ABCDEF0123456789.gr7.us-west-2.eks.amazonaws.com"


class FakeEks:
    """DescribeCluster of cluster "demo"; counts the calls."""

    def __init__(self, endpoint=EKS_ENDPOINT):
        self.endpoint = endpoint
        self.calls = []

    def describe_cluster(self, name):
        self.calls.append(name)
        return {"cluster": {"name": name, "endpoint": self.endpoint, "status": "ACTIVE"}}


@pytest.fixture
def aws(seams):
    """The modules' AWS clients (EksopsModule's aws_clients): the fake EKS for "eks"; any other client (the node
    evidence of K4) is an error unless a test sets its own."""
    clients = dict(eks=FakeEks())
    asked = []

    def fake_aws(service):
        asked.append(service)
        if service not in clients:
            raise AssertionError("unexpected %s client" % service)
        return clients[service]

    seams["aws_clients"] = fake_aws
    return dict(clients=clients, asked=asked)


@pytest.fixture
def probes(monkeypatch):
    """The first contact's GET /version, recorded instead of sent (these kubeconfigs name EKS endpoints nothing
    answers). Patches the kubernetes library's VersionApi, no name of ours; tests with an API server to talk to
    (FakeApiServer) do without."""
    probed = []
    monkeypatch.setattr(VersionApi, "get_code", lambda api: probed.append(api.api_client))
    return probed


def test_k8s_client_uses_the_module_user_agent_and_probes_the_api_once(make, tmp_path, aws, probes):
    kubeconfig = write_kubeconfig(tmp_path, EKS_ENDPOINT)
    module = make(dict(AWS_ARGS, cluster_name="demo", kubeconfig=kubeconfig), uses_k8s=True)
    assert module.k8s() is module.k8s()
    assert module.k8s().user_agent.startswith("eksops.nodegroup/")
    assert module.core_v1().api_client is module.k8s()
    assert probes == [module.k8s()]
    assert aws["clients"]["eks"].calls == ["demo"]  # proven once (K4), not on every use


# --- SPEC K4: the cluster is proven --------------------------------------------------------------------------

@pytest.mark.parametrize("server", [EKS_ENDPOINT, EKS_ENDPOINT + "/", EKS_ENDPOINT.replace(".com", ".com:443"),
                                    EKS_ENDPOINT.replace("ABCDEF", "abcdef")])
def test_k4_a_kubeconfig_on_the_clusters_endpoint_needs_no_node_evidence(make, tmp_path, aws, probes, server):
    """The same endpoint, however spelled, is proof enough: no AWS call but DescribeCluster, no node LIST."""
    module = make(dict(AWS_ARGS, cluster_name="demo", kubeconfig=write_kubeconfig(tmp_path, server)),
                  uses_k8s=True)
    assert module.k8s() is not None
    assert aws["asked"] == ["eks"] and aws["clients"]["eks"].calls == ["demo"]


@pytest.mark.parametrize("how", ["kubeconfig", "host"])
def test_k4_another_endpoint_without_a_node_group_is_cluster_unreachable(make, tmp_path, aws, probes, how):
    """An ambient kubeconfig pointing elsewhere (another cluster, a wrong context), or a host option: refused
    before any use, naming both endpoints and cluster_name."""
    other = "https://127.0.0.1:6443"
    auth = dict(kubeconfig=write_kubeconfig(tmp_path, other)) if how == "kubeconfig" \
        else dict(host=other, api_key="t")
    module = make(dict(AWS_ARGS, cluster_name="demo", **auth), uses_k8s=True)
    with pytest.raises(UpgradeError) as raised:
        module.k8s()
    err = raised.value
    assert err.code == "ClusterUnreachable" and err.details["parameter"] == "cluster_name"
    assert other in err.msg and EKS_ENDPOINT in err.msg and "demo" in err.msg
    assert module.clients.k8s_client is None  # nothing cached: a later call is refused as well
    assert aws["asked"] == ["eks"]


def test_k4_cluster_name_credentials_are_proven_by_construction(make, tmp_path, monkeypatch, aws, probes):
    """With credentials built from cluster_name the client already uses DescribeCluster's endpoint: one
    DescribeCluster (for the credentials, answered by moto, seen by moto's request recorder), none more for the
    proof (the module's own clients are not asked)."""
    import boto3
    from moto import mock_aws
    from moto.moto_api import recorder

    monkeypatch.setenv("HOME", str(tmp_path))  # no ~/.kube/config
    monkeypatch.delenv("KUBECONFIG", raising=False)
    monkeypatch.chdir(tmp_path)  # moto's recorder writes to ./moto_recording unless MOTO_RECORDER_FILEPATH says
    with mock_aws():
        eks = boto3.client("eks", region_name="us-west-2", aws_access_key_id="AK", aws_secret_access_key="SK")
        endpoint = eks.create_cluster(name="demo", roleArn="arn:aws:iam::123456789012:role/eks",
                                      resourcesVpcConfig={"subnetIds": []})["cluster"]["endpoint"]
        module = make(dict(AWS_ARGS, cluster_name="demo"), uses_k8s=True)
        recorder.reset_recording()
        recorder.start_recording()
        try:
            client = module.k8s()
        finally:
            recorder.stop_recording()
        requests = [json.loads(line) for line in recorder.download_recording().splitlines() if line.strip()]
    assert client.configuration.host == endpoint
    assert [(r["method"], r["url"].rsplit("/", 2)[-2:]) for r in requests] == [("GET", ["clusters", "demo"])]
    assert aws["asked"] == [] and aws["clients"]["eks"].calls == []


def test_unreachable_api_fails_at_first_contact_as_cluster_unreachable(make, tmp_path):
    """U8 ClusterUnreachable, within the first-contact window instead of the long retry window."""
    clock = FakeClock()
    with socket.socket() as sock:  # a port nothing listens on
        sock.bind(("127.0.0.1", 0))
        closed = sock.getsockname()[1]
    kubeconfig = write_kubeconfig(tmp_path, "http://127.0.0.1:%d" % closed)
    module = make(dict(AWS_ARGS, cluster_name="demo", kubeconfig=kubeconfig), uses_k8s=True, clock=clock)
    with pytest.raises(UpgradeError) as raised:
        module.k8s()
    assert raised.value.code == "ClusterUnreachable"
    assert str(closed) in raised.value.msg
    # retried on the module's clock, within the first-contact window (no retry starts that would end past it)
    assert len(clock.sleeps) >= 2 and 1000 < clock.now() <= 1000 + module_utils.FIRST_CONTACT_RETRY_SECONDS


# --- K4 by node evidence: another endpoint (a proxy), the node group's instances' nodes are there -------------


@pytest.fixture
def moto_group():
    """A moto node group (terraform-aws-eks, 3 instances); the modules' own AWS clients answer from moto."""
    from moto import mock_aws

    from ..moto_nodegroup import MotoNodegroup

    with mock_aws():
        yield MotoNodegroup(desired=3)


@pytest.fixture
def proxy():
    """The API server at another endpoint than the EKS one (a proxy): a FakeApiServer."""
    with FakeApiServer() as server:
        yield server


def proxied_module(make, tmp_path, proxy, nodes, node_ready_timeout=900):
    """A module of node group workers whose kubeconfig points at ``proxy``, whose node LIST answers ``nodes``."""
    from ..moto_nodegroup import AWS_PARAMS, CLUSTER, NODEGROUP

    proxy.core = FakeCoreV1(nodes)
    spec = dict(cluster_name=dict(type="str", required=True), nodegroup_name=dict(type="str", required=True),
                asg_name=dict(type="str"), node_ready_timeout=dict(type="int"))
    args = dict(AWS_PARAMS, cluster_name=CLUSTER, nodegroup_name=NODEGROUP, node_ready_timeout=node_ready_timeout,
                kubeconfig=write_kubeconfig(tmp_path, proxy.url))
    return make(args, spec=spec, uses_k8s=True), proxy.core.store


def test_k4_another_endpoint_is_proven_by_the_groups_nodes(make, tmp_path, proxy, moto_group):
    module, store = proxied_module(make, tmp_path, proxy, moto_group.raw_nodes())
    assert module.k8s().configuration.host == proxy.url
    assert [kwargs.get("label_selector") for dummy, kwargs in store.calls] == [None]


def test_k4_young_instances_still_joining_do_not_disprove(make, tmp_path, proxy, moto_group):
    """Instances launched less than node_ready_timeout ago may not have their node yet."""
    module, _store = proxied_module(make, tmp_path, proxy, moto_group.raw_nodes()[:1])
    assert module.k8s().configuration.host == proxy.url


def test_k4_an_old_instance_without_its_node_disproves(make, tmp_path, proxy, moto_group):
    """One instance still has no node although node_ready_timeout is past (0 s here: every instance is older)."""
    nodes = moto_group.raw_nodes()
    missing = nodes.pop()["spec"]["providerID"].rsplit("/", 1)[-1]
    module, _store = proxied_module(make, tmp_path, proxy, nodes, node_ready_timeout=0)
    with pytest.raises(UpgradeError) as raised:
        module.k8s()
    err = raised.value
    assert err.code == "ClusterUnreachable" and err.details["parameter"] == "cluster_name"
    assert proxy.url in err.msg and moto_group.cluster_endpoint in err.msg
    assert missing in err.msg and moto_group.asg_name in err.msg
    assert err.details["instances_without_node"] == [missing]


def test_k4_another_clusters_api_has_none_of_the_groups_nodes(make, tmp_path, proxy, moto_group):
    """The kubeconfig is another cluster's: its nodes are other instances'; even young instances prove nothing."""
    from ..moto_nodegroup import node_labels, raw_node

    strangers = [raw_node("ip-10-9-0-%d" % i, "i-0%015x" % i, "us-west-2a",
                          node_labels("self_managed", "us-west-2a", "ip-10-9-0-%d" % i)) for i in range(3)]
    module, _store = proxied_module(make, tmp_path, proxy, strangers)
    with pytest.raises(UpgradeError) as raised:
        module.k8s()
    assert raised.value.code == "ClusterUnreachable"
    assert "none of the 3 InService instances" in raised.value.msg
