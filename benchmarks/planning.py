# -*- coding: utf-8 -*-
# Copyright: Contributors to the eksops.nodegroup project
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""nodegroup_info planning an upgrade of an Auto Scaling group of 1000 instances: time and memory.

The module's main() runs in this process against in-process moto (mock_aws), with the node LIST answered by a
fake CoreV1 API that returns one Ready node per instance (as tests/unit/plugins/modules/test_nodegroup_info.py
does). Each run builds its own boto3 session, as a module run under Ansible does.

Time is split into the time spent inside AWS calls (botocore serialisation + moto answering in-process) and the
rest (the module: joining instances to nodes, splitting old from new, planning batches, building the result).
Peak memory is measured in a separate run under tracemalloc (which slows Python down), and the process's
ru_maxrss is reported as well (it includes moto's 1000 instances).

    .venv/bin/python benchmarks/planning.py [--instances 1000] [--runs 3] [--json PATH]
"""

from __future__ import annotations

import io
import json
import resource
import sys
import time
import tracemalloc
from collections import Counter
from contextlib import redirect_stdout
from statistics import median
from unittest import mock

from common import argument_parser, print_table, write_json

# The unit tests' helpers, as the package they are (common puts build/collections on sys.path).
from ansible_collections.eksops.nodegroup.tests.unit.plugins import moto_nodegroup  # noqa: E402  (sets MOTO_EC2_LOAD_DEFAULT_AMIS before moto loads)
from ansible_collections.eksops.nodegroup.tests.unit.plugins.fakes import FakeStore  # noqa: E402  (the fake API server)
from ansible_collections.eksops.nodegroup.tests.unit.plugins.module_args import patch_module_args  # noqa: E402
from moto import mock_aws  # noqa: E402

from ansible_collections.eksops.nodegroup.plugins.module_utils.host import clients as clients_utils  # noqa: E402
from ansible_collections.eksops.nodegroup.plugins.module_utils.host.module import EksopsModule  # noqa: E402
from ansible_collections.eksops.nodegroup.plugins.modules import nodegroup_info  # noqa: E402

GOAL_SECONDS = 5.0
GOAL_MIB = 300.0


class NodeList:
    """The node LIST of a cluster whose kubelets registered every instance of the group, served by the unit
    tests' fake API server (raw JSON, paged with limit/continue, label selectors)."""

    def __init__(self, asg):
        self.store = FakeStore([{"metadata": {"name": "ip-10-0-%d-%d" % divmod(index, 250),
                                              "labels": {}},
                                 "spec": {"providerID": "aws:///%s/%s" % (i["AvailabilityZone"], i["InstanceId"])},
                                 "status": {"conditions": [{"type": "Ready", "status": "True"}]}}
                                for index, i in enumerate(asg["Instances"])])
        self.list_node = self.store.list_func

    @property
    def requests(self):
        return len(self.store.calls)


class AwsCallTimer:
    """Counts the module's AWS calls and the time spent inside them (request built -> response parsed)."""

    def __init__(self):
        self.calls = Counter()
        self.seconds = 0.0
        self._started = {}
        self._real_aws_client = clients_utils.aws_client

    def aws_client(self, params, service, session=None):
        client = self._real_aws_client(params, service, session=session)
        client.meta.events.register("before-parameter-build.*.*", self._before)
        client.meta.events.register("after-call.*.*", self._after)
        return client

    def _before(self, model, **_kwargs):
        self.calls[model.name] += 1
        self._started[model.name] = time.perf_counter()

    def _after(self, model, **_kwargs):
        self.seconds += time.perf_counter() - self._started.pop(model.name)


def plan_once(node_list, target, max_unavailable_percentage):
    """One nodegroup_info run; returns (seconds, result, AwsCallTimer)."""
    timer = AwsCallTimer()
    args = dict(moto_nodegroup.AWS_PARAMS, cluster_name=moto_nodegroup.CLUSTER,
                nodegroup_name=moto_nodegroup.NODEGROUP, kubeconfig="/unused", target=target,
                max_unavailable_percentage=max_unavailable_percentage, seed=1)
    output = io.StringIO()
    with patch_module_args(args), redirect_stdout(output), \
            mock.patch.object(EksopsModule, "core_v1", lambda self: node_list), \
            mock.patch.object(clients_utils, "aws_client", timer.aws_client):
        started = time.perf_counter()
        try:
            nodegroup_info.main()
        except SystemExit:
            pass
        seconds = time.perf_counter() - started
    return seconds, json.loads(output.getvalue()), timer


def main():
    parser = argument_parser(__doc__.split("\n", 1)[0], "planning")
    parser.add_argument("--instances", type=int, default=1000)
    parser.add_argument("--runs", type=int, default=3, help="timed runs (the median is reported)")
    parser.add_argument("--max-unavailable-percentage", type=int, default=10)
    args = parser.parse_args()

    with mock_aws():
        started = time.perf_counter()
        world = moto_nodegroup.MotoNodegroup(desired=args.instances)
        setup_seconds = time.perf_counter() - started
        node_list = NodeList(world.asg())

        runs = [plan_once(node_list, world.new_ami, args.max_unavailable_percentage) for _run in range(args.runs)]
        tracemalloc.start()
        _seconds, traced_result, _timer = plan_once(node_list, world.new_ami, args.max_unavailable_percentage)
        _current, traced_peak = tracemalloc.get_traced_memory()
        tracemalloc.stop()

    for _seconds, result, _timer in runs + [(None, traced_result, None)]:
        if result.get("failed"):
            sys.exit("nodegroup_info failed: %s" % result.get("msg"))
    group = runs[0][1]["nodegroup"]
    if len(group["old_instances"]) != args.instances or not all(i["node_name"] for i in group["instances"]):
        sys.exit("the plan does not cover every instance: %d old of %d" % (len(group["old_instances"]), args.instances))

    total = median(seconds for seconds, _result, _timer in runs)
    aws = median(timer.seconds for _seconds, _result, timer in runs)
    module_only = median(seconds - timer.seconds for seconds, _result, timer in runs)
    peak_mib = traced_peak / 2 ** 20
    maxrss_mib = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    calls = dict(runs[0][2].calls)
    results = {
        "instances": args.instances,
        "runs": args.runs,
        "moto_setup_seconds": setup_seconds,
        "seconds_median": total,
        "seconds_all": [seconds for seconds, _result, _timer in runs],
        "aws_call_seconds_median": aws,
        "module_seconds_median": module_only,
        "tracemalloc_peak_mib": peak_mib,
        "process_maxrss_mib": maxrss_mib,
        "aws_calls": calls,
        "node_list_requests_per_run": node_list.requests // (args.runs + 1),
        "batches": [len(batch) for batch in group["plan"]["batches"]],
        "goals": {"seconds": GOAL_SECONDS, "mib": GOAL_MIB,
                  "met": total < GOAL_SECONDS and peak_mib < GOAL_MIB},
    }

    print(f"nodegroup_info on an ASG of {args.instances} instances (median of {args.runs} runs; "
          f"moto setup {setup_seconds:.1f} s, not counted)\n")
    print_table(["figure", "value", "goal"], [
        ["wall time, s", total, f"< {GOAL_SECONDS:g}"],
        ["  inside AWS calls (in-process moto), s", aws, None],
        ["  the module itself, s", module_only, None],
        ["peak traced memory (tracemalloc), MiB", peak_mib, f"< {GOAL_MIB:g}"],
        ["process peak RSS incl. moto, MiB", maxrss_mib, None],
        ["AWS calls", sum(calls.values()), None],
        ["node LIST requests", results["node_list_requests_per_run"], None],
        ["batches", "%d x %d" % (len(results["batches"]), results["batches"][0]) if results["batches"] else 0, None],
    ])
    print("\nAWS calls: " + ", ".join(f"{name} {count}" for name, count in sorted(calls.items())))
    write_json(args.json, results)


if __name__ == "__main__":
    main()
