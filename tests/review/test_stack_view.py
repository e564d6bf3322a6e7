"""The offline review's ``AnalyzeStack`` request is made of views over the captured resources
(``gpulease.review.stack_view``): the captured wire ``Struct`` is handed to the servicer as it is, not copied into a
protobuf message, and both servicers (the pack's and pulumi-policy's own) answer the views exactly as they answer
the messages ``policy_runner._stack_resource`` builds."""

from __future__ import annotations

from pathlib import Path

import pytest
from pulumi.runtime.proto import analyzer_pb2
from pulumi_policy import policy as sdk_policy

from gpulease.review import policy_runner
from gpulease.review.render import render_stack_file
from gpulease.review.stack_view import StackRequest, StackResource
from policies.guardrails import pack
from policies.guardrails.servicer import SharedConversionServicer

ROOT = Path(__file__).resolve().parents[2]


def _renderings():
    for path in sorted((ROOT / "stacks").glob("Pulumi.*.yaml")):
        rendering = render_stack_file(path)
        if rendering.error is None:
            yield path.name, rendering


def test_the_runner_hands_the_captured_struct_itself(monkeypatch: pytest.MonkeyPatch) -> None:
    runner = policy_runner.PolicyRunner()
    seen = []
    answer = runner.servicer.AnalyzeStack
    monkeypatch.setattr(runner.servicer, "AnalyzeStack", lambda request, context: seen.append(request) or answer(
        request, context))
    _, rendering = next(_renderings())
    runner.analyze(rendering)
    (request,) = seen
    wired = {r.urn: r.output_struct for r in rendering.resources if r.output_struct is not None}
    assert wired
    handed = {r.urn: r.properties for r in request.resources if r.urn in wired}
    assert handed and all(handed[urn] is wired[urn] for urn in handed)


@pytest.mark.parametrize("servicer_class", [SharedConversionServicer, sdk_policy._PolicyAnalyzerServicer])
def test_views_and_messages_get_the_same_answer(servicer_class) -> None:
    compared = 0
    for name, rendering in _renderings():
        servicer = servicer_class(pack.PACK_NAME, "0.0.0", pack.all_policies(), pack.PACK_ENFORCEMENT, None, None,
                                  None, None, None, None, None)
        servicer.ConfigureStack(analyzer_pb2.AnalyzerStackConfigureRequest(
            stack=rendering.stack, project=rendering.project, organization="organization", dry_run=True), None)
        providers = policy_runner._ProviderInfo(rendering)
        messages = analyzer_pb2.AnalyzeStackRequest(
            resources=[policy_runner._stack_resource(r, providers) for r in rendering.resources])
        views = StackRequest([
            StackResource(r, policy_runner._struct(r.output_struct, r.outputs), policy_runner._options(r),
                          providers.of(r)) for r in rendering.resources])
        for message, view in zip(messages.resources, views.resources, strict=True):
            for field in ("type", "urn", "name", "parent", "options", "properties"):
                assert getattr(view, field) == getattr(message, field), (name, view.urn, field)
            if message.HasField("provider"):  # unset, protobuf reads an empty message and the view None
                assert view.provider == message.provider, (name, view.urn)
            assert list(view.dependencies) == list(message.dependencies)
            assert {k: list(v.urns) for k, v in view.propertyDependencies.items()} == {
                k: list(v.urns) for k, v in message.propertyDependencies.items()}
            for field in ("options", "provider", "properties"):
                assert view.HasField(field) == message.HasField(field), (name, view.urn, field)
        expected = servicer.AnalyzeStack(messages, None)
        got = servicer.AnalyzeStack(views, None)
        assert got.SerializeToString(deterministic=True) == expected.SerializeToString(deterministic=True), name
        compared += len(expected.diagnostics) + 1
    assert compared > 10


def test_an_unknown_field_is_refused_as_protobuf_refuses_it() -> None:
    with pytest.raises(ValueError, match="no non-repeated submessage field"):
        StackResource.__new__(StackResource).HasField("nope")
