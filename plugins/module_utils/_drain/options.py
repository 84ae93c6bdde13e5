# -*- coding: utf-8 -*-
# Copyright: Contributors to the eksops.nodegroup project
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""What a drain is asked to do: the node names and the options with their SPEC names and defaults (D1-D16)."""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any
import datetime

from ansible_collections.eksops.nodegroup.plugins.module_utils.errors import invalid_parameter
from ansible_collections.eksops.nodegroup.plugins.module_utils.plan.drain_limits import check_drain_timeout
from ansible_collections.eksops.nodegroup.plugins.module_utils.kube.label_selector import (
    SELECTOR_SYNTAX,
    parse_label_selector,
)


MAX_EVICTION_CONCURRENCY = 100

DEFAULT_OPTIONS = dict(
    drain_timeout=900,
    grace_period=-1,
    force=False,
    ignore_daemonsets=True,
    delete_emptydir_data=True,
    disable_eviction=False,
    skip_wait_for_delete_timeout=0,
    pod_selectors=None,
    exclude_from_load_balancers=True,
    post_drain_wait=60,
    post_drain_min_wait=None,
    ignore_load_balancer_timeout=False,
    eviction_concurrency=10,
    run_id=None,
    check_mode=False,
)


class DrainOptions:
    """Validated drain options with the SPEC names (defaults are the upgrade defaults)."""

    def __init__(self, **options: Any) -> None:
        unknown = sorted(set(options) - set(DEFAULT_OPTIONS))
        if unknown:
            raise invalid_parameter(unknown[0], "unknown drain option(s): %s" % ", ".join(unknown))
        values = dict(DEFAULT_OPTIONS)
        values.update(dict((key, value) for key, value in options.items() if value is not None))
        for name in ("drain_timeout", "grace_period", "skip_wait_for_delete_timeout", "post_drain_wait",
                     "eviction_concurrency"):
            values[name] = int(values[name])
        # The one rule, shared with the nodegroup_upgrade role's check before its first AWS call (issue 26 item 6).
        check_drain_timeout(values["drain_timeout"])
        if values["post_drain_min_wait"] is not None:
            values["post_drain_min_wait"] = int(values["post_drain_min_wait"])
        for name in ("skip_wait_for_delete_timeout", "post_drain_wait", "post_drain_min_wait"):
            if values[name] is not None and values[name] < 0:
                raise invalid_parameter(name, "%s must be >= 0, got %d" % (name, values[name]))
        minimum = values["post_drain_min_wait"]
        if minimum is not None and minimum > values["post_drain_wait"]:
            raise invalid_parameter("post_drain_min_wait", "post_drain_min_wait (%s s) must not exceed post_drain_wait "
                                    "(%s s), the longest a drained node waits" % (minimum, values["post_drain_wait"]))
        if not 1 <= values["eviction_concurrency"] <= MAX_EVICTION_CONCURRENCY:
            raise invalid_parameter("eviction_concurrency", "eviction_concurrency must be between 1 and %d, got %d"
                                    % (MAX_EVICTION_CONCURRENCY, values["eviction_concurrency"]))
        selectors = values["pod_selectors"]
        if isinstance(selectors, (list, tuple)):
            selectors = ",".join(s.strip() for s in selectors if s and s.strip())
        try:
            # What the pod LISTs will send as labelSelector, refused here as the API server would refuse it, so
            # that no node is cordoned for a drain that cannot list its pods (issue 10 item 24).
            parse_label_selector(selectors)
        except ValueError as exc:
            raise invalid_parameter("pod_selectors", "pod_selectors %r is not a Kubernetes label selector: %s (the "
                                    "syntax: %s)" % (selectors, exc, SELECTOR_SYNTAX), value=selectors)
        values["pod_selectors"] = selectors or None
        if not values["run_id"]:
            values["run_id"] = datetime.datetime.now(datetime.timezone.utc).strftime("drain-%Y%m%dT%H%M%SZ")
        self.__dict__.update(values)

    @classmethod
    def coerce(cls, options: DrainOptions | Mapping[str, Any] | None) -> DrainOptions:
        if isinstance(options, cls):
            return options
        return cls(**dict(options or {}))

    def as_dict(self) -> dict[str, Any]:
        return dict((key, getattr(self, key)) for key in DEFAULT_OPTIONS)


def validate_names(node_names: Iterable[str] | None) -> list[str]:
    """The node names, refused (naming ``names``) when none is given or one is repeated."""
    names = [name for name in (node_names or []) if name]
    if not names:
        raise invalid_parameter("names", "no node names given")
    if len(set(names)) != len(names):
        raise invalid_parameter("names", "node names are repeated: %s" % ", ".join(names))
    return names


def noop_log(_message: str) -> None:
    """The log of a caller that gave none."""
