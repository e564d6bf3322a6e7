"""What the mocks' answers are made of: the accounts, stable ids from a hash, addresses, zones."""

from __future__ import annotations

import hashlib

from gpulease.review.mock_registry import MockState

ACCOUNT_ID = "123456789012"
ALICLOUD_ACCOUNT_ID = "1234567890123456"


def _hex(*parts: str, length: int = 17) -> str:
    return hashlib.sha256("/".join(parts).encode()).hexdigest()[:length]


def _ip(*parts: str, block: str = "198.51.100") -> str:
    return f"{block}.{int(_hex(*parts, length=4), 16) % 250 + 2}"


def _zones(m: MockState) -> list[str]:
    # Alibaba's mainland zones are <region>-<letter> (cn-hangzhou-h); AWS and Alibaba's others <region><letter>.
    if m.region.startswith("cn-"):
        return [f"{m.region}-{s}" for s in "hij"]
    return [f"{m.region}{s}" for s in "abc"]
