# -*- coding: utf-8 -*-
# Copyright: Contributors to the eksops.nodegroup project
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Reading one mapping of a scenario: typed keys with defaults, and errors that start with the key's path.

`Section` wraps a mapping and its path (``nodegroups[0]``); each typed getter marks its key as known, so
`finish()` can refuse any key the schema did not ask for (a typo must not silently fall back to a default).
"""

from __future__ import annotations

import re
from typing import Any

__all__ = ["ScenarioError", "Section", "join_path", "type_name"]


class ScenarioError(ValueError):
    """A scenario does not match the schema; the message starts with the offending key path."""


_MISSING = object()
_PERCENT = re.compile(r"^(100|[1-9]?[0-9])%$")


def join_path(path: str, key: str | int) -> str:
    """The key path of `key` inside `path`: ``a.b``, ``a[0]``, or just ``b`` at the top."""
    if isinstance(key, int):
        return f"{path}[{key}]"
    return f"{path}.{key}" if path else key


def type_name(value: Any) -> str:
    """The YAML-ish name of a value's type, for error messages."""
    return "null" if value is None else type(value).__name__


class Section:
    """Reads one mapping of the scenario, remembering which keys were consumed."""

    def __init__(self, raw: Any, path: str):
        if raw is None:
            raw = {}
        if not isinstance(raw, dict):
            raise ScenarioError(f"{path or 'scenario'}: expected a mapping, got {type_name(raw)}")
        for key in raw:
            if not isinstance(key, str):
                raise ScenarioError(f"{path or 'scenario'}: keys must be strings, got {key!r}")
        self.raw = raw
        self.path = path
        self._known: set[str] = set()

    def path_of(self, key: str) -> str:
        return join_path(self.path, key)

    def has(self, key: str) -> bool:
        return key in self.raw

    def _take(self, key: str, default: Any, required: bool) -> Any:
        self._known.add(key)
        if key not in self.raw:
            if required:
                raise ScenarioError(f"{self.path_of(key)}: required")
            return default
        return self.raw[key]

    def _non_empty_string(self, key: str, value: Any, expected: str, hint: str = "") -> str:
        if not isinstance(value, str) or not value:
            raise ScenarioError(f"{self.path_of(key)}: expected {expected}, got {value!r}{hint}")
        return value

    def string(self, key: str, default: Any = _MISSING, *, required: bool = False,
               choices: tuple[str, ...] | None = None) -> Any:
        value = self._take(key, default, required)
        if value is default and not required:
            return value
        hint = " (quote version numbers: \"1.30\", not 1.30)" if isinstance(value, float) else ""
        self._non_empty_string(key, value, "a non-empty string", hint)
        if choices is not None and value not in choices:
            raise ScenarioError(f"{self.path_of(key)}: must be one of {', '.join(choices)}; got {value!r}")
        return value

    def optional_string(self, key: str) -> str | None:
        value = self._take(key, None, False)
        if value is None:
            return None
        return self._non_empty_string(key, value, "a non-empty string or null")

    def boolean(self, key: str, default: bool) -> bool:
        value = self._take(key, default, False)
        if not isinstance(value, bool):
            raise ScenarioError(f"{self.path_of(key)}: expected true or false, got {value!r}")
        return value

    def integer(self, key: str, default: Any = _MISSING, *, required: bool = False, minimum: int | None = 0,
                maximum: int | None = None) -> Any:
        """An integer within [minimum, maximum]; with default None, an absent or null key gives None."""
        value = self._take(key, default, required)
        if value is None and default is None:
            return None
        if isinstance(value, bool) or not isinstance(value, int):
            raise ScenarioError(f"{self.path_of(key)}: expected an integer, got {value!r}")
        if minimum is not None and value < minimum:
            raise ScenarioError(f"{self.path_of(key)}: must be >= {minimum}, got {value}")
        if maximum is not None and value > maximum:
            raise ScenarioError(f"{self.path_of(key)}: must be <= {maximum}, got {value}")
        return value

    def number(self, key: str, default: Any = _MISSING, *, required: bool = False, positive: bool = False,
               maximum: float | None = None) -> Any:
        """A number >= 0 (> 0 if positive); with default None, an absent or null key gives None."""
        value = self._take(key, default, required)
        if value is None and default is None:
            return None
        if isinstance(value, bool) or not isinstance(value, (int, float)):
            raise ScenarioError(f"{self.path_of(key)}: expected a number, got {value!r}")
        if value < 0 or (positive and value == 0):
            raise ScenarioError(f"{self.path_of(key)}: must be {'> 0' if positive else '>= 0'}, got {value}")
        if maximum is not None and value > maximum:
            raise ScenarioError(f"{self.path_of(key)}: must be <= {maximum}, got {value}")
        return value

    def int_or_percent(self, key: str) -> int | str:
        """A count >= 0 or a percentage "NN%" (as a PodDisruptionBudget takes them)."""
        value = self._take(key, None, False)
        if isinstance(value, bool) or not isinstance(value, (int, str)):
            raise ScenarioError(f"{self.path_of(key)}: expected an integer or \"NN%\", got {value!r}")
        if isinstance(value, int):
            return self.integer(key)
        if not _PERCENT.match(value):
            raise ScenarioError(
                f"{self.path_of(key)}: expected an integer or a percentage such as \"50%\", got {value!r}")
        return value

    def string_map(self, key: str) -> dict[str, str]:
        value = self._take(key, None, False)
        if value is None:
            return {}
        if not isinstance(value, dict):
            raise ScenarioError(f"{self.path_of(key)}: expected a mapping of strings, got {type_name(value)}")
        for k, v in value.items():
            if not isinstance(k, str) or not isinstance(v, str):
                raise ScenarioError(
                    f"{join_path(self.path_of(key), str(k))}: keys and values must be strings "
                    f"(quote numbers and booleans), got {v!r}")
        return dict(value)

    def items(self, key: str) -> list[tuple[str, Any]]:
        """The list under `key` (default empty) as (path, item) pairs."""
        value = self._take(key, None, False)
        if value is None:
            return []
        if not isinstance(value, list):
            raise ScenarioError(f"{self.path_of(key)}: expected a list, got {type_name(value)}")
        return [(join_path(self.path_of(key), i), item) for i, item in enumerate(value)]

    def section(self, key: str) -> "Section":
        return Section(self._take(key, None, False), self.path_of(key))

    def raw_value(self, key: str, default: Any = None) -> Any:
        return self._take(key, default, False)

    def finish(self) -> None:
        unknown = [k for k in self.raw if k not in self._known]
        if unknown:
            raise ScenarioError(f"{self.path_of(unknown[0])}: unknown key")
