# -*- coding: utf-8 -*-
# Copyright: Contributors to the eksops.nodegroup project
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Label selectors (string and LabelSelector forms) and field selectors, as the API server parses them."""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Callable, Iterable

from .errors import bad_request

_KEY = r"[A-Za-z0-9](?:[-A-Za-z0-9_./]*[A-Za-z0-9])?"
_VALUE = r"(?:[A-Za-z0-9](?:[-A-Za-z0-9_.]*[A-Za-z0-9])?)?"
_KEY_RE = re.compile(rf"^{_KEY}$")
_VALUE_RE = re.compile(rf"^{_VALUE}$")
_SET_RE = re.compile(rf"^\s*({_KEY})\s+(in|notin)\s*\((.*)\)\s*$")
_EQ_RE = re.compile(rf"^\s*({_KEY})\s*(==|=|!=)\s*(\S*)\s*$")
_EXISTS_RE = re.compile(rf"^\s*(!?)\s*({_KEY})\s*$")


@dataclass(frozen=True)
class Requirement:
    key: str
    operator: str  # "=", "!=", "in", "notin", "exists", "!exists"
    values: frozenset[str] = frozenset()

    def matches(self, labels: dict[str, str]) -> bool:
        present = self.key in labels
        if self.operator == "exists":
            return present
        if self.operator == "!exists":
            return not present
        if self.operator in ("=", "in"):
            return present and labels[self.key] in self.values
        return not present or labels[self.key] not in self.values  # "!=" and "notin"


class LabelSelector:
    """A conjunction of requirements; an empty selector matches everything."""

    def __init__(self, requirements: Iterable[Requirement] = ()):
        self.requirements = tuple(requirements)

    def matches(self, labels: dict[str, str] | None) -> bool:
        labels = labels or {}
        return all(req.matches(labels) for req in self.requirements)

    def equalities(self) -> list[tuple[str, str]]:
        """The key=value pairs every match must carry (usable to narrow a search through an index)."""
        return [(r.key, next(iter(r.values))) for r in self.requirements
                if r.operator in ("=", "in") and len(r.values) == 1]

    @property
    def empty(self) -> bool:
        return not self.requirements


class _MatchNothing(LabelSelector):
    def matches(self, labels: dict[str, str] | None) -> bool:
        return False

    @property
    def empty(self) -> bool:
        return False


MATCH_NOTHING = _MatchNothing()


def _split_top_level(text: str) -> list[str]:
    """Split on commas outside parentheses."""
    parts, depth, current = [], 0, []
    for char in text:
        if char == "(":
            depth += 1
        elif char == ")":
            depth -= 1
        if char == "," and depth == 0:
            parts.append("".join(current))
            current = []
        else:
            current.append(char)
    parts.append("".join(current))
    return parts


def _check_value(value: str, text: str) -> str:
    if len(value) > 63 or not _VALUE_RE.match(value):
        raise bad_request(f"unable to parse requirement: invalid label value: {value!r} in {text!r}")
    return value


def parse_label_selector(text: str | None) -> LabelSelector:
    """Parse `a=b,c!=d,e in (f,g),h notin (i),j,!k` (the labelSelector query parameter)."""
    if text is None or not text.strip():
        return LabelSelector()
    requirements = []
    for part in _split_top_level(text):
        if not part.strip():
            raise bad_request(f"unable to parse requirement: found '', expected: identifier in {text!r}")
        match = _SET_RE.match(part)
        if match:
            values = [_check_value(v.strip(), text) for v in match.group(3).split(",")]
            requirements.append(Requirement(match.group(1), match.group(2), frozenset(values)))
            continue
        match = _EQ_RE.match(part)
        if match:
            operator = "!=" if match.group(2) == "!=" else "="
            value = _check_value(match.group(3), text)
            requirements.append(Requirement(match.group(1), operator, frozenset([value])))
            continue
        match = _EXISTS_RE.match(part)
        if match:
            requirements.append(Requirement(match.group(2), "!exists" if match.group(1) else "exists"))
            continue
        raise bad_request(f"unable to parse requirement: {part.strip()!r} in label selector {text!r}")
    return LabelSelector(requirements)


_EXPRESSION_OPERATORS = {"In": "in", "NotIn": "notin", "Exists": "exists", "DoesNotExist": "!exists"}


def from_label_selector_object(selector: dict | None) -> LabelSelector:
    """A metav1.LabelSelector: null matches nothing, {} matches everything (policy/v1 semantics)."""
    if selector is None:
        return MATCH_NOTHING
    requirements = [Requirement(k, "=", frozenset([str(v)])) for k, v in (selector.get("matchLabels") or {}).items()]
    for expression in selector.get("matchExpressions") or []:
        operator = _EXPRESSION_OPERATORS.get(expression.get("operator"))
        if operator is None:
            raise bad_request(f"invalid label selector operator {expression.get('operator')!r}")
        requirements.append(Requirement(expression.get("key", ""), operator,
                                        frozenset(expression.get("values") or [])))
    return LabelSelector(requirements)


@dataclass(frozen=True)
class FieldRequirement:
    field: str
    value: str
    negate: bool

    def matches(self, actual: str) -> bool:
        return (actual == self.value) != self.negate


class FieldSelector:
    def __init__(self, requirements: Iterable[FieldRequirement], getters: dict[str, Callable[[dict], str]]):
        self.requirements = tuple(requirements)
        self._getters = getters

    def matches(self, obj: dict) -> bool:
        return all(req.matches(self._getters[req.field](obj)) for req in self.requirements)

    def equal_value(self, field: str) -> str | None:
        """The value `field` must equal, when the selector pins it."""
        for req in self.requirements:
            if req.field == field and not req.negate:
                return req.value
        return None


def parse_field_selector(text: str | None, getters: dict[str, Callable[[dict], str]], kind: str) -> FieldSelector:
    """Parse `spec.nodeName=x,status.phase!=Failed`; a field the resource does not index is a 400."""
    requirements = []
    for part in ([] if text is None or not text.strip() else text.split(",")):
        for operator in ("!=", "==", "="):
            if operator in part:
                name, value = part.split(operator, 1)
                break
        else:
            raise bad_request(f"invalid selector: {text!r}; can't understand {part!r}")
        name = name.strip()
        if name not in getters:
            raise bad_request(f'field label not supported: "{name}" for {kind}')
        requirements.append(FieldRequirement(name, value.strip(), operator == "!="))
    return FieldSelector(requirements, getters)
