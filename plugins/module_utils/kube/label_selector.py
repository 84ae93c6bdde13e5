# -*- coding: utf-8 -*-
# Copyright: Contributors to the eksops.nodegroup project
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Label selectors: a metav1.LabelSelector matched against labels, and a selector string parsed as the API
server parses the ``labelSelector`` parameter (k8s.io/apimachinery/pkg/labels/selector.go), so that a
``pod_selectors`` the server would refuse is refused before the first cordon (issue 10 item 24).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any
import re


def _integer(text: str | None) -> int | None:
    try:
        return int(text)
    except (TypeError, ValueError):
        return None


def selector_matches(selector: Mapping[str, Any] | None, labels: Mapping[str, str] | None) -> bool:
    """A metav1.LabelSelector (dict) against a label dict; a null selector matches nothing, {} everything.

    Also takes what parse_label_selector makes of a selector string: its Gt and Lt requirements hold, as in
    the API server's labels.Selector, for a label whose value is an integer greater (or less) than the one given.
    """
    if selector is None:
        return False
    labels = labels or {}
    for key, value in (selector.get("matchLabels") or {}).items():
        if labels.get(key) != value:
            return False
    for expression in selector.get("matchExpressions") or []:
        key, operator = expression.get("key"), expression.get("operator")
        values = expression.get("values") or []
        if operator == "In" and labels.get(key) not in values:
            return False
        if operator == "NotIn" and key in labels and labels[key] in values:
            return False
        if operator == "Exists" and key not in labels:
            return False
        if operator == "DoesNotExist" and key in labels:
            return False
        if operator in ("Gt", "Lt"):
            have, limit = _integer(labels.get(key)), _integer(values[0] if values else None)
            if have is None or limit is None or not (have > limit if operator == "Gt" else have < limit):
                return False
    return True


# --------------------------------------------------------------------------------------------------------
# Label selector strings (pod_selectors), parsed as the API server parses the labelSelector parameter
# (k8s.io/apimachinery/pkg/labels/selector.go: its lexer, Parser and NewRequirement's checks), so that a selector
# the server would refuse is refused before the first cordon (issue 10 item 24).
# --------------------------------------------------------------------------------------------------------

SELECTOR_SYNTAX = ("key, !key, key=value, key==value, key!=value, key in (v1,v2), key notin (v1,v2), key>n or "
                   "key<n, joined by commas")
_SELECTOR_SYMBOLS = frozenset("=!(),<>")
_SELECTOR_TOKENS = frozenset(["(", ")", ",", "!", "=", "==", "!=", ">", "<"])
_SELECTOR_SPACE = frozenset(" \t\r\n")
_SELECTOR_OPERATORS = {"in": "In", "notin": "NotIn", "=": "In", "==": "In", "!=": "NotIn", ">": "Gt", "<": "Lt"}
# k8s.io/apimachinery/pkg/util/validation: IsQualifiedName (label keys) and IsValidLabelValue.
_QUALIFIED_NAME = re.compile(r"^([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]$")
_DNS1123_SUBDOMAIN = re.compile(r"^[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$")
_LABEL_VALUE = re.compile(r"^(([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9])?$")
_SIGNED_INTEGER = re.compile(r"^[+-]?[0-9]+$")


def _selector_tokens(text: str) -> list[tuple[str, str]]:
    """[(kind, literal)]: kind "id", "in", "notin", a symbol, or "end" (the lexer of labels.Parse)."""
    tokens, index = [], 0
    while index < len(text):
        char = text[index]
        if char in _SELECTOR_SPACE:
            index += 1
        elif char in _SELECTOR_SYMBOLS:
            # The longest run of symbols that is still a token ("!=", "=="); the next symbol starts a new one.
            end = index + 1
            while end < len(text) and text[end] in _SELECTOR_SYMBOLS and text[index:end + 1] in _SELECTOR_TOKENS:
                end += 1
            tokens.append((text[index:end], text[index:end]))
            index = end
        else:
            end = index
            while end < len(text) and text[end] not in _SELECTOR_SPACE and text[end] not in _SELECTOR_SYMBOLS:
                end += 1
            word = text[index:end]
            tokens.append((word if word in ("in", "notin") else "id", word))
            index = end
    tokens.append(("end", ""))
    return tokens


def _check_label_key(key: str) -> None:
    parts = key.split("/")
    if len(parts) > 2:
        raise ValueError("invalid label key %r: a key is a name with an optional DNS prefix and one '/'" % key)
    name = parts[-1]
    if len(parts) == 2 and not (parts[0] and len(parts[0]) <= 253 and _DNS1123_SUBDOMAIN.match(parts[0])):
        raise ValueError("invalid label key %r: its prefix must be a lowercase DNS subdomain (e.g. example.com)"
                         % key)
    if not name or len(name) > 63 or not _QUALIFIED_NAME.match(name):
        raise ValueError("invalid label key %r: the name must be 1 to 63 letters, digits, '-', '_' or '.', starting "
                         "and ending with a letter or digit" % key)


def _check_label_value(key: str, value: str, operator: str) -> None:
    if len(value) > 63 or not _LABEL_VALUE.match(value):
        raise ValueError("invalid label value %r for key %r: at most 63 letters, digits, '-', '_' or '.', starting "
                         "and ending with a letter or digit" % (value, key))
    if operator in ("Gt", "Lt") and not _SIGNED_INTEGER.match(value):
        raise ValueError("for key %r, the value of '>' and '<' must be an integer, got %r" % (key, value))


class _SelectorParser:
    def __init__(self, text: str) -> None:
        self.tokens = _selector_tokens(text)
        self.position = 0

    def peek(self, values: bool = True) -> tuple[str, str]:
        kind, literal = self.tokens[self.position]
        # In a place where values are read, "in" and "notin" are plain words (a key or a value may be "in").
        return ("id" if values and kind in ("in", "notin") else kind), literal

    def take(self, values: bool = True) -> tuple[str, str]:
        token = self.peek(values)
        self.position += 1
        return token

    def parse(self) -> list[dict[str, Any]]:
        expressions = []
        while True:
            kind, literal = self.peek()
            if kind == "end":
                return expressions
            if kind not in ("id", "!"):
                raise ValueError("found '%s', expected: !, identifier, or 'end of string'" % literal)
            expressions.append(self.requirement())
            kind, literal = self.take()
            if kind == "end":
                return expressions
            if kind != ",":
                raise ValueError("found '%s', expected: ',' or 'end of string'" % literal)
            kind, literal = self.peek()
            if kind not in ("id", "!"):
                raise ValueError("found '%s', expected: identifier after ','" % literal)

    def requirement(self) -> dict[str, Any]:
        negated = self.peek()[0] == "!"
        if negated:
            self.take()
        kind, key = self.take()
        if kind != "id":
            raise ValueError("found '%s', expected: identifier" % key)
        _check_label_key(key)
        if self.peek()[0] in ("end", ","):
            return dict(key=key, operator="DoesNotExist" if negated else "Exists")
        if negated:
            raise ValueError("found '%s', expected: ',' or 'end of string' after !%s" % (self.peek()[1], key))
        kind, literal = self.take(values=False)
        operator = _SELECTOR_OPERATORS.get(kind)
        if operator is None:
            raise ValueError("found '%s', expected: in, notin, =, ==, !=, >, <" % literal)
        values = self.value_set() if kind in ("in", "notin") else self.exact_value()
        for value in values:
            _check_label_value(key, value, operator)
        return dict(key=key, operator=operator, values=values)

    def exact_value(self) -> list[str]:
        kind, literal = self.peek()
        if kind in ("end", ","):
            return [""]
        self.take()
        if kind != "id":
            raise ValueError("found '%s', expected: identifier" % literal)
        return [literal]

    def value_set(self) -> list[str]:
        kind, literal = self.take()
        if kind != "(":
            raise ValueError("found '%s', expected: '('" % literal)
        kind, literal = self.peek()
        if kind == ")":
            self.take()
            return [""]
        if kind not in ("id", ","):
            raise ValueError("found '%s', expected: ',', ')' or identifier" % literal)
        values = []
        while True:
            kind, literal = self.take()
            if kind == "id":
                values.append(literal)
                kind, literal = self.peek()
                if kind == ")":
                    self.take()
                    return sorted(set(values))
                if kind != ",":
                    raise ValueError("found '%s', expected: ',' or ')'" % literal)
            elif kind == ",":
                # "(,a)", "(a,)" and "(a,,b)" hold the empty value, as for the API server.
                if not values or self.peek()[0] in (",", ")"):
                    values.append("")
                if self.peek()[0] == ")":
                    self.take()
                    return sorted(set(values))
            else:
                raise ValueError("found '%s', expected: ',', or identifier" % literal)


def parse_label_selector(text: str | None) -> dict[str, list[dict[str, Any]]]:
    """A label selector string (``app=web,tier in (a,b),!canary``) as a metav1.LabelSelector dict for
    selector_matches: every requirement in ``matchExpressions`` (``=``/``==`` as In and ``!=`` as NotIn with one
    value, ``>``/``<`` as Gt/Lt). Raises ValueError, saying what is wrong where the API server would refuse it;
    an empty string is the empty selector (every pod)."""
    return dict(matchExpressions=_SelectorParser(text or "").parse())
