# -*- coding: utf-8 -*-
# Copyright: Contributors to the eksops.nodegroup project
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""How the collection reads the shapes of AWS answers: tag lists, tags asked in chunks, paged calls."""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping, Sequence
from typing import Any


def aws_tags_to_dict(tags: Iterable[Mapping[str, str]] | dict[str, str] | None) -> dict[str, str]:
    """[{"Key": k, "Value": v}, ...] (any AWS tag shape) -> {k: v}; a dict is returned as a copy."""
    if tags is None:
        return {}
    if isinstance(tags, dict):
        return dict(tags)
    return dict((tag["Key"], tag.get("Value", "")) for tag in tags)


def tags_in_chunks(describe_tags: Callable[..., Any], ids_parameter: str, id_key: str, ids: Sequence[str],
                   per_call: int) -> dict[str, dict[str, str]]:
    """{id: {key: value}} from an Elastic Load Balancing DescribeTags, which takes at most ``per_call`` resources:
    ``describe_tags(**{ids_parameter: chunk})`` per chunk of ``ids``, each TagDescriptions entry keyed by its
    ``id_key``; no request for no id."""
    tags = {}
    for start in range(0, len(ids), per_call):
        for description in describe_tags(**{ids_parameter: list(ids[start:start + per_call])})["TagDescriptions"]:
            tags[description[id_key]] = aws_tags_to_dict(description.get("Tags"))
    return tags


def paginate(client: Any, operation: str, result_key: str, **kwargs: Any) -> list[Any]:
    """All items of a paged AWS describe/list call, in order."""
    items = []
    for page in client.get_paginator(operation).paginate(**kwargs):
        items.extend(page.get(result_key, []))
    return items
