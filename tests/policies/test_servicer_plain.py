"""The stack request's properties are read once into both forms a rule reads: the SDK's proxies and ``common.plain``
of them; each resource's plain reading is its own and lasts only for the request that made it."""

from __future__ import annotations

from pathlib import Path

from google.protobuf import struct_pb2
from pulumi_policy.proxy import UNKNOWN_ARRAY_VALUE, UNKNOWN_STRING_VALUE

from policies.guardrails import common
from policies.guardrails.servicer import properties, properties_and_plain
from tests.policies.test_servicer_speed import ASSET, SECRET, SIG, example_structs, shape

ROOT = Path(__file__).resolve().parents[2]


def canon(value: object) -> object:
    """Plain data as comparable values: an asset or archive (no equality of its own) by its type and fields."""
    if isinstance(value, dict):
        return {k: canon(x) for k, x in value.items()}
    if isinstance(value, list):
        return [canon(x) for x in value]
    if hasattr(value, "__dict__") and value is not common.UNKNOWN:
        return (type(value).__name__, sorted(map(repr, vars(value).items())))
    return value


def both(struct: struct_pb2.Struct) -> tuple[object, object]:
    proxied, flat = properties_and_plain(struct)
    return shape(proxied), canon(flat)


def expected(struct: struct_pb2.Struct) -> tuple[object, object]:
    proxied = properties(struct)
    return shape(proxied), canon(common.plain(proxied))


def test_one_pass_gives_the_proxies_and_their_plain_reading() -> None:
    struct = struct_pb2.Struct()
    struct.update({
        "s": "x", "n": 3, "b": False, "none": None, "unknown": UNKNOWN_STRING_VALUE, "empty": {}, "list": [],
        "listed": [UNKNOWN_STRING_VALUE, "a", 1, None, True, [UNKNOWN_ARRAY_VALUE], {"k": UNKNOWN_STRING_VALUE}],
        "nested": {"a": [1, {"b": [UNKNOWN_STRING_VALUE, None]}], "c": {"d": "e"}},
        "secret": {SIG: SECRET, "value": {"k": ["v", UNKNOWN_STRING_VALUE]}},
        "asset": {SIG: ASSET, "text": "hello"},
        "deep": [[{"x": [{SIG: SECRET, "value": UNKNOWN_STRING_VALUE}]}]],
    })
    assert both(struct) == expected(struct)
    flat = properties_and_plain(struct)[1]
    assert flat["unknown"] is common.UNKNOWN and flat["listed"][0] is common.UNKNOWN
    assert flat["listed"][5] == [common.UNKNOWN] and flat["listed"][6] == {"k": common.UNKNOWN}
    assert flat["nested"]["a"][1]["b"][0] is common.UNKNOWN and flat["secret"]["k"][1] is common.UNKNOWN


def test_one_pass_reads_every_example_stack_as_the_two_passes_do() -> None:
    compared = 0
    for urn, struct in example_structs():
        assert both(struct) == expected(struct), urn
        compared += 1
    assert compared > 300


def test_a_remembered_reading_is_its_resources_and_its_requests_only() -> None:
    first, second = properties(struct_pb2.Struct()), properties(struct_pb2.Struct())  # equal, distinct objects
    mine, theirs = {"mine": 1}, {"theirs": 2}
    with common.one_request():
        common.remember_plain(first, mine)
        common.remember_plain(second, theirs)
        assert common.plain_props(first) is mine and common.plain_props(second) is theirs
        assert common.plain_props(properties(struct_pb2.Struct())) == {}  # a third one: its own reading
    with common.one_request():
        assert common.plain_props(first) == {}  # the next request reads it afresh
    common.remember_plain(first, mine)  # outside a request nothing is kept
    assert common.plain_props(first) == {}
