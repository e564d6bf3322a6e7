"""The pack's servicer reads each request's properties in one pass (``servicer.properties``) and plans each type's
policies once per ``Configure``: exactly what the SDK's three passes and per-request loops give."""

from __future__ import annotations

import math
from pathlib import Path

import pytest
from google.protobuf import json_format, struct_pb2
from pulumi.runtime.proto import analyzer_pb2
from pulumi_policy import EnforcementLevel, ResourceValidationPolicy
from pulumi_policy.deserialize import deserialize_properties
from pulumi_policy.proxy import UnknownValueError, unknown_checking_proxy

from gpulease.review.policy_runner import _ProviderInfo, _stack_resource, _struct
from gpulease.review.render import render_stack_file
from policies.guardrails import common, pack
from policies.guardrails.servicer import SharedConversionServicer, properties

ROOT = Path(__file__).resolve().parents[2]
UNKNOWN_STRING = "04da6b54-80e4-46f7-96ec-b56ff0331ba9"
SECRET = "1b47061264138c4ac30d75fd1eb44270"
SIG = "4dabf18193072939515e22adb298388d"
ASSET = "c44067f5952c0a294b673a41bacd8c17"


def shape(value):
    """A proxied value as types, targets and paths, so two readings compare exactly."""
    kind = type(value)
    if kind.__name__ in ("_DictProxy", "_ListProxy"):
        target = value["__target"]
        acc = value._DictProxy__props_acc if kind.__name__ == "_DictProxy" else value._ListProxy__props_acc
        inner = {k: shape(x) for k, x in target.items()} if isinstance(target, dict) else [shape(x) for x in target]
        return (kind.__name__, tuple(acc), inner)
    return (kind.__name__, sorted(map(repr, vars(value).items())) if hasattr(value, "__dict__") else repr(value))


def sdk_reading(struct: struct_pb2.Struct):
    return unknown_checking_proxy(deserialize_properties(json_format.MessageToDict(struct)))


def test_one_pass_reads_values_as_the_sdk_does() -> None:
    struct = struct_pb2.Struct()
    struct.update({
        "s": "x", "n": 3, "f": 2.5, "b": True, "none": None, "unknown": UNKNOWN_STRING, "empty": {}, "list": [],
        "nested": {"a": [1, {"b": [UNKNOWN_STRING, None, False]}], "c": {"d": "e"}},
        "secret": {SIG: SECRET, "value": {"k": ["v", 1]}},
        "asset": {SIG: ASSET, "text": "hello"},
        "deep": [[{"x": [{SIG: SECRET, "value": "hidden"}]}]],
    })
    ours, theirs = properties(struct), sdk_reading(struct)
    assert shape(ours) == shape(theirs)
    assert ours["n"] == 3.0 and type(ours["n"]) is float
    assert ours["secret"]["k"][0] == "v" and ours["asset"].text == "hello"
    with pytest.raises(UnknownValueError) as caught:
        ours["nested"]["a"][1]["b"][0]
    assert caught.value.message == "string value at .nested.a.1.b.0 can't be known during preview"


@pytest.mark.parametrize("number", [math.inf, -math.inf, math.nan])
def test_one_pass_refuses_what_the_sdk_refuses(number: float) -> None:
    struct = struct_pb2.Struct()
    struct.fields["n"].number_value = number
    with pytest.raises(ValueError) as ours:
        properties(struct)
    with pytest.raises(ValueError) as theirs:
        sdk_reading(struct)
    assert str(ours.value) == str(theirs.value)


def example_structs():
    """(urn, Struct) of every example stack's resources, as ``Analyze`` (inputs) and ``AnalyzeStack`` send them."""
    for path in sorted((ROOT / "stacks").glob("Pulumi.*.yaml")):
        rendering = render_stack_file(path)
        if rendering.error is not None:
            continue
        providers = _ProviderInfo(rendering)
        for res in rendering.resources:
            for struct in (_struct(res.input_struct, res.inputs), _stack_resource(res, providers).properties):
                yield res.urn, struct


def test_one_pass_reads_every_example_stack_as_the_sdk_does() -> None:
    compared = 0
    for urn, struct in example_structs():
        assert shape(properties(struct)) == shape(sdk_reading(struct)), urn
        compared += 1
    assert compared > 300


def servicer() -> SharedConversionServicer:
    return SharedConversionServicer(pack.PACK_NAME, "0.1.0", pack.all_policies(), pack.PACK_ENFORCEMENT)


def configure(s: SharedConversionServicer, **levels: int) -> None:
    request = analyzer_pb2.ConfigureAnalyzerRequest()
    for name, level in levels.items():
        request.policyConfig[name].enforcementLevel = level
    s.Configure(request, None)


def test_a_resource_no_rule_reads_costs_no_conversion(monkeypatch: pytest.MonkeyPatch) -> None:
    s = servicer()
    configure(s)
    read: list[object] = []
    monkeypatch.setattr("policies.guardrails.servicer.properties", lambda struct: read.append(struct))
    response = s.Analyze(analyzer_pb2.AnalyzeRequest(type="random:index/randomId:RandomId", urn="urn:x", name="x"),
                         None)
    assert read == [] and list(response.diagnostics) == []


def test_levels_set_by_a_later_configure_are_followed() -> None:
    seen: list[str] = []
    policy = common.judges(ResourceValidationPolicy(
        name="sees", description="d", enforcement_level=EnforcementLevel.ADVISORY,
        validate=lambda args, report: (seen.append(args.name), report("found"))), ["t:m:R"])
    s = SharedConversionServicer("p", "0.1.0", [policy], EnforcementLevel.ADVISORY)
    request = analyzer_pb2.AnalyzeRequest(type="t:m:R", urn="urn:r", name="r")
    configure(s)
    assert [d.enforcementLevel for d in s.Analyze(request, None).diagnostics] == [analyzer_pb2.ADVISORY]
    configure(s, sees=analyzer_pb2.MANDATORY)
    assert [d.enforcementLevel for d in s.Analyze(request, None).diagnostics] == [analyzer_pb2.MANDATORY]
    configure(s, sees=analyzer_pb2.DISABLED)
    assert list(s.Analyze(request, None).diagnostics) == [] and seen == ["r", "r"]


def test_the_pack_answers_its_first_request_without_pydantic_or_the_cost_model() -> None:
    """What ``policies/__main__.py`` imports before serving: the rules and the compute readers, not the catalog's
    pydantic models or the cost model, which the rules import when they first read them."""
    import subprocess
    import sys

    code = ("import sys; sys.path.insert(0, 'policies'); from guardrails import pack; from guardrails.servicer "
            "import SharedConversionServicer; pack.all_policies(); "
            "print(sorted(m for m in ('pydantic', 'gpulease.core.cost', 'gpulease.core.catalog.models') "
            "if m in sys.modules))")
    out = subprocess.run([sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "[]"


def test_the_served_servicer_keeps_the_collector_off_what_the_process_holds_and_answers_the_same(monkeypatch) -> None:
    import gc
    import weakref

    from gpulease.review.policy_runner import _options
    from policies.guardrails.servicer import ServedServicer

    rendering = render_stack_file(ROOT / "stacks" / "Pulumi.ali-full-7b.yaml")
    assert rendering.error is None
    providers = _ProviderInfo(rendering)
    request = analyzer_pb2.AnalyzeStackRequest(resources=[_stack_resource(r, providers) for r in rendering.resources])
    resource = rendering.resources[-1]
    single = analyzer_pb2.AnalyzeRequest(type=resource.type, urn=resource.urn, name=resource.name,
                                         options=_options(resource), provider=providers.of(resource),
                                         properties=_struct(resource.input_struct, resource.inputs))
    freezes: list[int] = []
    real_freeze = gc.freeze
    monkeypatch.setattr(gc, "freeze", lambda: freezes.append(1) or real_freeze())
    gc.unfreeze()
    try:
        served = ServedServicer(pack.PACK_NAME, "0.1.0", pack.all_policies(), pack.PACK_ENFORCEMENT)
        built = gc.get_freeze_count()
        assert built > 10_000  # what the process held when the servicer was built is out of the collector's reach
        plain = servicer()
        configure(served), configure(plain)

        class Cycle:
            pass

        garbage = Cycle()
        garbage.me = garbage
        dead = weakref.ref(garbage)
        del garbage
        gc.disable()  # no collection of its own during the request: only the servicer's can free the cycle
        try:
            first = served.AnalyzeStack(request, None)
        finally:
            gc.enable()
        assert dead() is None  # collected before the second freeze: garbage is never frozen
        assert len(freezes) == 2  # once when built, once after the first stack
        assert first.SerializeToString() == plain.AnalyzeStack(request, None).SerializeToString()
        assert len(first.diagnostics) > 0
        assert served.AnalyzeStack(request, None).SerializeToString() == first.SerializeToString()
        assert len(freezes) == 2  # frozen once after the first stack, not after every request
        assert served.Analyze(single, None).SerializeToString() == plain.Analyze(single, None).SerializeToString()
    finally:
        gc.unfreeze()


def test_a_provider_is_converted_once_across_requests_and_again_when_its_properties_differ(
        monkeypatch: pytest.MonkeyPatch) -> None:
    from pulumi_policy import policy as sdk_policy

    converted: list[str] = []
    sdk_reader = sdk_policy._PolicyAnalyzerServicer._get_provider_resource

    def counting(self, request):
        converted.append(request.provider.properties["region"])
        return sdk_reader(self, request)

    monkeypatch.setattr(sdk_policy._PolicyAnalyzerServicer, "_get_provider_resource", counting)
    s = servicer()
    configure(s)

    def request(region: str) -> analyzer_pb2.AnalyzeRequest:
        provider = analyzer_pb2.AnalyzerProviderResource(type="pulumi:providers:aws", name="default",
                                                         urn="urn:pulumi:s::p::pulumi:providers:aws::default")
        provider.properties.update({"region": region})
        return analyzer_pb2.AnalyzeRequest(type="aws:ec2/instance:Instance", urn="urn:pulumi:s::p::aws:x::gpu",
                                           name="gpu", provider=provider)

    answers = [s.Analyze(request(region), None).SerializeToString()
               for region in ("us-east-1", "us-east-1", "eu-west-1", "us-east-1")]
    assert converted == ["us-east-1", "eu-west-1"]
    assert answers[0] == answers[1] == answers[3]
    configure(s)
    s.Analyze(request("us-east-1"), None)
    assert converted == ["us-east-1", "eu-west-1", "us-east-1"]  # Configure starts afresh
