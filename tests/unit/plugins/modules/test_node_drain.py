# -*- coding: utf-8 -*-
# Copyright: Contributors to the eksops.nodegroup project
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""node_drain module: documentation matches the argument spec, option mapping, and run() on a fake API."""

from __future__ import annotations

import pytest
import yaml
from moto import mock_aws

from ansible_collections.eksops.nodegroup.plugins.module_utils.errors import UpgradeError
from ansible_collections.eksops.nodegroup.plugins.module_utils.host.module import EksopsModule
from ansible_collections.eksops.nodegroup.plugins.module_utils.nodegroup.discovery import find_nodegroup
from ansible_collections.eksops.nodegroup.plugins.module_utils.steps import node_drain as drain_step
from ansible_collections.eksops.nodegroup.plugins.modules import node_drain

from ..fakes import FakeCluster, NodeListing, ec2_node, make_pod, node
from ..moto_nodegroup import SELF_MANAGED, SELF_MANAGED_EKSCTL, TERRAFORM, MotoNodegroup, run_module_in_process

pytestmark = pytest.mark.usefixtures("fake_api_classes")


def _documented_options():
    """The module's own options and those of the drain_options fragment (shared with node_replace)."""
    from ansible_collections.eksops.nodegroup.plugins.doc_fragments.drain_options import ModuleDocFragment

    options = dict(yaml.safe_load(node_drain.DOCUMENTATION)["options"])
    shared = yaml.safe_load(ModuleDocFragment.DOCUMENTATION)["options"]
    assert not set(options) & set(shared)
    options.update(shared)
    return options


def _check_spec(spec, documented, path=""):
    assert set(spec) == set(documented), path
    for name, option in spec.items():
        doc = documented[name]
        where = path + name
        assert doc.get("type", "str") == option.get("type", "str"), where
        assert doc.get("default") == option.get("default"), where
        assert sorted(doc.get("aliases") or []) == sorted(option.get("aliases") or []), where
        assert doc.get("choices") == option.get("choices"), where
        assert doc.get("elements") == option.get("elements"), where
        assert bool(doc.get("required")) == bool(option.get("required")), where
        if "options" in option:
            _check_spec(option["options"], doc["suboptions"], where + ".")


def test_documentation_matches_argument_spec():
    _check_spec(node_drain.ARGUMENT_SPEC, _documented_options())


def test_examples_and_return_are_valid_yaml():
    examples = yaml.safe_load(node_drain.EXAMPLES)
    assert all("eksops.nodegroup.node_drain" in task for task in examples)
    assert "nodes" in yaml.safe_load(node_drain.RETURN)["drain"]["contains"]


def _params(**overrides):
    params = dict(name=None, names=None, instance_ids=None, nodegroup_name=None, asg_name=None, state="drain",
                  pod_selectors=None, exclude_from_load_balancers=True,
                  post_drain_wait=0, post_drain_min_wait=None, ignore_load_balancer_timeout=False,
                  eviction_concurrency=10, run_id="run-1", cluster_name=None,
                  delete_options=dict(terminate_grace_period=-1, force=False, ignore_daemonsets=True,
                                      delete_emptydir_data=True, disable_eviction=False, wait_timeout=5,
                                      skip_wait_for_delete_timeout=0))
    params.update(overrides)
    return params


def test_delete_options_map_to_the_spec_names():
    params = _params(delete_options=dict(terminate_grace_period=12, force=True, ignore_daemonsets=False,
                                         delete_emptydir_data=False, disable_eviction=True, wait_timeout=77,
                                         skip_wait_for_delete_timeout=3), pod_selectors=["app=web"])
    options = drain_step.engine_options(params, check_mode=True)
    assert (options.grace_period, options.force, options.ignore_daemonsets, options.delete_emptydir_data,
            options.disable_eviction, options.drain_timeout, options.skip_wait_for_delete_timeout,
            options.pod_selectors, options.check_mode) == (12, True, False, False, True, 77, 3, "app=web", True)


class ModuleFailed(Exception):
    pass


class FakeModule:
    with_diff = EksopsModule.with_diff  # the real one: it reads only _diff

    def __init__(self, cluster, params, check_mode=False, diff=False, aws=None):
        self.cluster = cluster
        self.params = params
        self.check_mode = check_mode
        self._diff = diff
        self.warnings = []
        self.failure = None
        self.aws_clients = aws or {}

    def core_v1(self):
        return self.cluster

    def aws(self, service):
        return self.aws_clients[service]

    def warn(self, message):
        self.warnings.append(message)

    def log(self, message):
        pass

    def fail_upgrade(self, err, **result):
        self.failure = (err, result)
        raise ModuleFailed(err.msg)


def test_drain_result_shape_and_warnings():
    cluster = FakeCluster([make_pod("web-0"), make_pod("cache-0", empty_dir=True)])
    module = FakeModule(cluster, _params(name="node-a"), diff=True)
    result = drain_step.run(module)
    assert result["changed"] is True and result["drain"]["requests_made"] == len(cluster.requests)
    assert result["drain"]["nodes"]["node-a"]["evicted"] == ["default/cache-0", "default/web-0"]
    assert result["diff"]["after"]["node-a"]["unschedulable"] is True
    assert any("emptyDir" in w for w in module.warnings)


def test_failure_reports_pod_eviction_failure_with_the_nodes():
    cluster = FakeCluster([make_pod("debug", owner=None)])
    module = FakeModule(cluster, _params(name="node-a"))
    with pytest.raises(ModuleFailed):
        drain_step.run(module)
    err, result = module.failure
    assert err.code == "PodEvictionFailure"
    assert result["drain"]["nodes"]["node-a"]["failed"][0]["pod"] == "default/debug"


def test_cordon_then_uncordon_states_are_idempotent():
    cluster = FakeCluster()
    assert drain_step.run(FakeModule(cluster, _params(names=["node-a"], state="cordon")))["changed"]
    assert not drain_step.run(FakeModule(cluster, _params(names=["node-a"], state="cordon")))["changed"]
    assert drain_step.run(FakeModule(cluster, _params(names=["node-a"], state="uncordon")))["changed"]
    assert not drain_step.run(FakeModule(cluster, _params(names=["node-a"], state="uncordon")))["changed"]
    assert cluster.nodes["node-a"]["spec"].get("unschedulable") is None


def test_check_mode_cordon_changes_nothing():
    cluster = FakeCluster(nodes=[node("node-a")])
    result = drain_step.run(FakeModule(cluster, _params(name="node-a", state="cordon"), check_mode=True, diff=True))
    assert result["changed"] and result["diff"]["after"]["node-a"]["unschedulable"] is True
    assert "diff" not in drain_step.run(FakeModule(cluster, _params(name="node-a", state="cordon"), check_mode=True))
    assert not cluster.verbs("patch")


@pytest.fixture(params=[(SELF_MANAGED, TERRAFORM), (SELF_MANAGED_EKSCTL, None)], ids=["terraform", "eksctl"])
def group_world(request):
    """Node group workers of cluster demo, of a kind that labels no node or of one that does (SPEC K1)."""
    kind, convention = request.param
    with mock_aws():
        world = MotoNodegroup(desired=2, kind=kind, convention=convention or TERRAFORM)
        world.members = sorted(i["InstanceId"] for i in world.asg()["Instances"])
        world.selector = "alpha.eksctl.io/nodegroup-name=workers" if kind == SELF_MANAGED_EKSCTL else None
        yield world


def group_module(world, cluster, params):
    return FakeModule(cluster, params, aws=dict(autoscaling=world.autoscaling, eks=world.eks, ec2=world.ec2,
                                                elbv2=world.elbv2, elb=world.elb))


def group_node(world, name, instance_id):
    """A node of the world's group: labelled as its kind labels nodes (eksctl), or not at all (terraform)."""
    return ec2_node(name, instance_id, nodegroup="workers" if world.selector else None)


def test_instance_ids_drain_the_nodes_found_by_provider_id_and_report_instances_without_one(group_world):
    """U5: an instance that had no node when the batch was planned may have joined since: drained all the same.
    K2: nodes are matched by providerID, the LIST narrowed by the group's label where its kind sets one."""
    first, second = group_world.members
    nodes = [group_node(group_world, "node-a", first), group_node(group_world, "node-b", second)]
    cluster = NodeListing([make_pod("web-0"), make_pod("web-1", node="node-b")], nodes=nodes)
    params = _params(instance_ids=[first, second, "i-0c"], nodegroup_name="workers", cluster_name="demo")
    result = drain_step.run(group_module(group_world, cluster, params))
    assert result["drain"]["instances"] == {first: "node-a", second: "node-b", "i-0c": None}
    assert sorted(result["drain"]["nodes"]) == ["node-a", "node-b"]
    assert result["drain"]["nodes"]["node-b"]["evicted"] == ["default/web-1"]
    assert result["drain"]["requests_made"] == len(cluster.requests)
    assert [r[2] for r in cluster.verbs("list", "nodes")][0] == group_world.selector


def test_a_drain_given_what_node_replace_read_ahead_asks_aws_nothing_and_lists_no_node(group_world):
    """Issue 11 item 4: the node group as the last termination read it, the batch's nodes as the planner joined
    them and the load balancers found during the last post-drain wait: the first request is the node's own GET."""
    first, second = group_world.members
    nodes = [group_node(group_world, "node-a", first), group_node(group_world, "node-b", second)]
    cluster = NodeListing([make_pod("web-0")], nodes=nodes)
    group = find_nodegroup(group_world.autoscaling, group_world.eks, "demo", "workers", None)
    prepared = drain_step.PreparedDrain(group, {first: "node-a"}, None)
    params = _params(instance_ids=[first], nodegroup_name="workers", cluster_name="demo")
    # No AWS client at all: FakeModule.aws fails for any service.
    module = FakeModule(cluster, params)
    outcome = drain_step.drain(module, drain_step.DrainStep.from_params(params, False), prepared)
    assert outcome.instances == {first: "node-a"} and outcome.nodes["node-a"]["evicted"] == ["default/web-0"]
    assert cluster.requests[0] == ("get", "node", "node-a") and not cluster.verbs("list", "nodes")


def test_instance_ids_without_any_node_change_nothing(group_world):
    cluster = NodeListing(nodes=[group_node(group_world, "node-a", "i-0a")])
    params = _params(instance_ids=["i-0c"], nodegroup_name="workers", cluster_name="demo")
    result = drain_step.run(group_module(group_world, cluster, params))
    # with a label: that LIST, then every node (a node that lost its label is still found); without: every node
    lists = [group_world.selector, None] if group_world.selector else [None]
    assert result == {"changed": False,
                      "drain": {"nodes": {}, "instances": {"i-0c": None}, "requests_made": len(lists)}}
    assert [r[2] for r in cluster.verbs("list", "nodes")] == lists
    assert not cluster.verbs("patch")


def test_instance_ids_without_a_node_group_list_every_node_once():
    cluster = NodeListing(nodes=[ec2_node("node-a", "i-0a")])
    result = drain_step.run(FakeModule(cluster, _params(instance_ids=["i-0a"], state="cordon")))
    assert result["drain"]["instances"] == {"i-0a": "node-a"} and result["changed"] is True
    assert [r[2] for r in cluster.verbs("list", "nodes")] == [None]


def test_an_unknown_node_group_is_named_before_anything_changes(group_world):
    cluster = NodeListing(nodes=[group_node(group_world, "node-a", "i-0a")])
    params = _params(instance_ids=["i-0a"], nodegroup_name="nope", cluster_name="demo")
    with pytest.raises(UpgradeError) as raised:
        drain_step.run(group_module(group_world, cluster, params))
    assert (raised.value.code, raised.value.details["parameter"]) == ("ResourceNotFound", "nodegroup_name")
    assert not cluster.verbs("patch") and not cluster.verbs("evict")


# --- Issue 10 item 24 ---------------------------------------------------------------------------------------------

def test_issue10_item24_an_invalid_pod_selector_is_refused_before_any_request():
    """`app in ((` used to be refused by the API server at the first pod LIST, after the node was cordoned."""
    cluster = FakeCluster(nodes=[node("node-a")])
    with pytest.raises(UpgradeError) as raised:
        drain_step.run(FakeModule(cluster, _params(name="node-a", pod_selectors=["app in (("])))
    assert (raised.value.code, raised.value.details["parameter"]) == ("InvalidParameter", "pod_selectors")
    assert "app in ((" in raised.value.msg
    assert cluster.requests == []


def other_group_instance(world):
    """An instance of another Auto Scaling group of the cluster (EC2 tags it aws:autoscaling:groupName=other)."""
    world.autoscaling.create_auto_scaling_group(
        AutoScalingGroupName="other", MinSize=1, MaxSize=1, DesiredCapacity=1,
        LaunchTemplate=dict(LaunchTemplateId=world.lt_id, Version="1"), VPCZoneIdentifier=world.subnets[0])
    return world.asg("other")["Instances"][0]["InstanceId"]


@pytest.mark.parametrize("state", ["drain", "cordon", "uncordon"])
def test_issue10_item24_nodegroup_name_refuses_a_named_node_of_another_group_before_any_change(group_world, state):
    """nodegroup_name=workers with a node of another group: refused, naming the node, its instance and its group,
    before any node is read for a change (no PATCH, no eviction, no Event)."""
    stray_instance = other_group_instance(group_world)
    nodes = [group_node(group_world, "node-a", group_world.members[0]),
             ec2_node("stray", stray_instance, nodegroup="other", unschedulable=state == "uncordon")]
    cluster = NodeListing([make_pod("web-0", node="stray")], nodes=nodes)
    params = _params(names=["node-a", "stray"], nodegroup_name="workers", cluster_name="demo", state=state)
    with pytest.raises(UpgradeError) as raised:
        drain_step.run(group_module(group_world, cluster, params))
    err = raised.value
    assert (err.code, err.details["parameter"]) == ("InvalidParameter", "names")
    assert "node stray (instance %s) is in Auto Scaling group other" % stray_instance in err.msg
    assert "node group other" in err.msg and "node group workers" in err.msg and "node-a" not in err.msg
    assert err.details["outside"] == [dict(node="stray", instance_id=stray_instance, asg_name="other",
                                           nodegroup="other")]
    assert [r[0] for r in cluster.requests] == ["get", "get"]


def test_issue10_item24_nodegroup_name_refuses_an_instance_of_another_group(group_world):
    stray_instance = other_group_instance(group_world)
    nodes = [group_node(group_world, "node-a", group_world.members[0]), ec2_node("stray", stray_instance)]
    cluster = NodeListing(nodes=nodes)
    params = _params(instance_ids=[group_world.members[0], stray_instance], nodegroup_name="workers",
                     cluster_name="demo", state="cordon")
    with pytest.raises(UpgradeError) as raised:
        drain_step.run(group_module(group_world, cluster, params))
    assert (raised.value.code, raised.value.details["parameter"]) == ("InvalidParameter", "instance_ids")
    assert "node stray (instance %s) is in Auto Scaling group other" % stray_instance in raised.value.msg
    assert not cluster.verbs("patch") and not cluster.verbs("get")


def test_issue10_item24_a_node_without_an_ec2_instance_is_outside_every_node_group(group_world):
    cluster = NodeListing(nodes=[node("fargate-ip-10-0-1-1")])
    params = _params(name="fargate-ip-10-0-1-1", nodegroup_name="workers", cluster_name="demo", state="cordon")
    with pytest.raises(UpgradeError) as raised:
        drain_step.run(group_module(group_world, cluster, params))
    assert raised.value.details["parameter"] == "name"
    assert "node fargate-ip-10-0-1-1 has no EC2 instance in its spec.providerID" in raised.value.msg
    assert not cluster.verbs("patch")


def test_issue10_item24_the_groups_own_nodes_are_cordoned_without_asking_ec2(group_world, monkeypatch):
    pairs = zip(("node-a", "node-b"), group_world.members)
    cluster = NodeListing(nodes=[group_node(group_world, name, instance_id) for name, instance_id in pairs])
    params = _params(names=["node-a", "node-b"], nodegroup_name="workers", cluster_name="demo", state="cordon")
    module = group_module(group_world, cluster, params)
    monkeypatch.delitem(module.aws_clients, "ec2")  # KeyError if the check asked EC2
    result = drain_step.run(module)
    assert result["changed"] and sorted(n for n, r in result["drain"]["nodes"].items() if r["cordoned"]) == ["node-a", "node-b"]
    assert result["drain"]["requests_made"] == len(cluster.requests)


def test_nodegroup_name_needs_cluster_name(capsys):
    """The node group is found in its cluster (K1): nodegroup_name without cluster_name is refused up front."""
    result = run_module_in_process(node_drain.main, dict(instance_ids=["i-0a"], nodegroup_name="workers"), capsys)
    assert result["failed"] is True
    assert "nodegroup_name" in result["msg"] and "cluster_name" in result["msg"]
