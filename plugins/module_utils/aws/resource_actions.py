# -*- coding: utf-8 -*-
# Copyright: Contributors to the eksops.nodegroup project
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""The AWS API calls a run made, for amazon.aws's debug_botocore_endpoint_logs option."""

from __future__ import annotations

import logging


class ResourceActions(logging.Handler):
    """amazon.aws's ``debug_botocore_endpoint_logs``: the AWS API calls the process makes from now on, as the
    ``resource_actions`` a module returns ("service:Operation", each once). As amazon.aws (module_utils/modules.py)
    it listens to the ``botocore.endpoint`` logger at debug level; it reads the operation model its "Making request
    for" record carries (botocore endpoint.py make_request) rather than parsing an https host name out of the
    text, so calls sent to an ``endpoint_url`` are named too."""

    def __init__(self) -> None:
        super().__init__(logging.DEBUG)
        self._actions = set()
        logger = logging.getLogger("botocore.endpoint")
        logger.setLevel(logging.DEBUG)
        logger.addHandler(self)

    def emit(self, record: logging.LogRecord) -> None:
        model = record.args[0] if isinstance(record.args, tuple) and record.args else None
        service_model = getattr(model, "service_model", None)
        if service_model is not None:
            self._actions.add("%s:%s" % (service_model.endpoint_prefix, model.name))

    def listed(self) -> list[str]:
        return sorted(self._actions)
