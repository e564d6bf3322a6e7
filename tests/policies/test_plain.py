"""Proxied properties as plain data: the fast path through pulumi-policy's proxies gives what reading every element
through the proxy (catching UnknownValueError) gives, unknown values included."""

from __future__ import annotations

import pytest
from pulumi_policy.proxy import UNKNOWN_ARRAY_VALUE, UNKNOWN_NUMBER_VALUE, UNKNOWN_STRING_VALUE, unknown_checking_proxy

from policies.guardrails import common as c

PROPS = {
    "instanceType": "g6.xlarge",
    "tags": {"gpulease:owner": "a@example.com", "gpulease:budget-usd": UNKNOWN_NUMBER_VALUE},
    "securityGroups": [UNKNOWN_STRING_VALUE, "sg-1"],
    "ebsBlockDevices": [{"volumeSize": 100, "iops": None, "kmsKeyId": UNKNOWN_STRING_VALUE}],
    "ipv6Addresses": UNKNOWN_ARRAY_VALUE,
    "nested": [[1, 2], [{"a": [True, False]}]],
    "empty": {},
}


def test_the_fast_path_agrees_with_reading_through_the_proxy(monkeypatch: pytest.MonkeyPatch) -> None:
    fast = c.plain(unknown_checking_proxy(PROPS))
    monkeypatch.setattr(c, "_DictProxy", None)
    general = c.plain(unknown_checking_proxy(PROPS))
    assert fast == general
    assert fast["tags"]["gpulease:budget-usd"] is c.UNKNOWN and fast["securityGroups"] == [c.UNKNOWN, "sg-1"]
    assert fast["ipv6Addresses"] is c.UNKNOWN and fast["ebsBlockDevices"][0]["kmsKeyId"] is c.UNKNOWN
    assert fast["nested"] == [[1, 2], [{"a": [True, False]}]] and fast["empty"] == {}
    assert type(fast) is dict and type(fast["securityGroups"]) is list  # plain data, no proxies left


def test_the_fast_path_knows_exactly_the_sdks_unknown_sentinels() -> None:
    from pulumi_policy import proxy

    sentinels = {getattr(proxy, n) for n in dir(proxy) if n.startswith("UNKNOWN_") and n.endswith("_VALUE")}
    assert sentinels == c._SENTINELS and all(proxy._is_unknown(s) for s in sentinels)
    assert c.plain(unknown_checking_proxy({"a": [*sentinels, "x"]})) == {"a": [c.UNKNOWN] * len(sentinels) + ["x"]}
