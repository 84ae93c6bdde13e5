"""Wall-clock timestamps as Kubernetes writes them (RFC 3339, UTC, second precision)."""

from __future__ import annotations

import time
from datetime import datetime, timezone


def rfc3339(epoch: float | None = None) -> str:
    return time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime(time.time() if epoch is None else epoch))


def parse_rfc3339(text: str) -> float:
    return datetime.strptime(text, "%Y-%m-%dT%H:%M:%SZ").replace(tzinfo=timezone.utc).timestamp()
