#!/usr/bin/env python
# -*- coding: utf-8 -*-
# Copyright: Contributors to the eksops.nodegroup project
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""What a person does with kubectl in the health_gate scenario, with the kubernetes client and $KUBECONFIG:

- ``pin N``: label every node of the cluster disk=old-ssd (kubectl label node), then apply a Deployment "pinned" of
  N replicas that run only on such nodes (a nodeSelector), and wait until all are Running: the scheduler spreads
  them, so every old node runs one and the new nodes, which lack the label, can run none;
- ``unpin``: drop the Deployment's nodeSelector (kubectl patch), so that its pods can run on the new nodes.
"""

from __future__ import annotations

import sys
import time

from kubernetes import client, config

PINNED = {"apiVersion": "apps/v1", "kind": "Deployment", "metadata": {"name": "pinned", "namespace": "default"},
          "spec": {"selector": {"matchLabels": {"app": "pinned"}},
                   "template": {"metadata": {"labels": {"app": "pinned"}},
                                "spec": {"nodeSelector": {"disk": "old-ssd"},
                                         "containers": [{"name": "app", "image": "public.ecr.aws/nginx/nginx:1.27"}]}}}}


def running(core: client.CoreV1Api) -> int:
    return len([p for p in core.list_namespaced_pod("default", label_selector="app=pinned").items
                if p.status.phase == "Running" and p.metadata.deletion_timestamp is None])


def pin(replicas: int) -> None:
    core, apps = client.CoreV1Api(), client.AppsV1Api()
    for node in core.list_node().items:
        core.patch_node(node.metadata.name, {"metadata": {"labels": {"disk": "old-ssd"}}})
    body = dict(PINNED, spec=dict(PINNED["spec"], replicas=replicas))
    apps.create_namespaced_deployment("default", body)
    deadline = time.monotonic() + 60
    while running(core) < replicas:
        if time.monotonic() > deadline:
            sys.exit("the pinned pods are not all Running after 60 s")
        time.sleep(0.5)


def unpin() -> None:
    client.AppsV1Api().patch_namespaced_deployment(
        "pinned", "default", {"spec": {"template": {"spec": {"nodeSelector": None}}}})


def main() -> None:
    config.load_kube_config()
    if sys.argv[1:2] == ["pin"]:
        pin(int(sys.argv[2]))
    elif sys.argv[1:] == ["unpin"]:
        unpin()
    else:
        sys.exit("usage: pinned_workload.py pin N | unpin")


if __name__ == "__main__":
    main()
