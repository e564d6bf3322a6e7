"""The review's cheaper equivalents of SDK steps give the SDK's own results (``gpulease.review.sdk_speed``)."""

from __future__ import annotations

import asyncio
import gc
import threading

import pulumi
import pytest
from pulumi.runtime import resource as sdk_resource
from pulumi.runtime import resource_cycle_breaker as sdk_cycles

from gpulease.review import sdk_speed
from gpulease.review.render import render


class _Leaf:
    def __init__(self, fn):
        self.result = fn()


class _Concrete:
    def __init__(self, fn):  # the third __init__ from the top, as a concrete resource's constructor
        self.inner = _Abstract(fn)


class _Abstract:
    def __init__(self, fn):
        self.inner = _Base(fn)


class _Base:
    def __init__(self, fn):
        self.result = fn()


def _program_frame(fn):
    """A "program" line that constructs a resource-like chain of three __init__ frames."""
    return _Concrete(fn).inner.inner.result


def test_the_stack_trace_is_the_sdks() -> None:
    ours = _program_frame(sdk_speed.stack_trace)
    theirs = _program_frame(sdk_resource._get_stack_trace)
    assert len(ours.frames) > 2
    # Same frames, innermost first, each with the same file URI and line; only this test's own line differs (the
    # two calls above), the second frame.
    assert [f.pc.uri for f in ours.frames] == [f.pc.uri for f in theirs.frames]
    lines = [f.pc.line for f in ours.frames]
    assert lines[:1] + lines[2:] == [f.pc.line for f in theirs.frames][:1] + [f.pc.line for f in theirs.frames][2:]
    assert lines[1] + 1 == theirs.frames[1].pc.line
    assert ours.frames[0].pc.uri.endswith("test_sdk_speed.py")


def test_without_three_constructors_the_stack_trace_is_empty_as_the_sdks() -> None:
    assert sdk_speed.stack_trace() == sdk_resource._get_stack_trace()
    assert len(sdk_speed.stack_trace().frames) == 0


class _Node:
    pass


@pytest.mark.parametrize("implementation", [sdk_cycles.declare_dependency, sdk_speed.declare_dependency])
def test_the_cycle_check_refuses_the_edges_the_sdk_refuses(implementation) -> None:
    a, b, c, d = _Node(), _Node(), _Node(), _Node()
    assert implementation(a, b) and implementation(b, c) and implementation(a, d)
    assert not implementation(c, a)  # c -> a would close a -> b -> c -> a
    assert not implementation(a, a)
    assert implementation(d, c)  # no cycle: a -> d -> c
    assert getattr(a, sdk_cycles._DEPENDENCIES_PROPERTY) == {b, d}


@pytest.fixture
def loop():
    """A loop of the test's own, and a fresh one for the next test afterwards."""
    own = asyncio.new_event_loop()
    asyncio.set_event_loop(own)
    yield own
    own.close()
    asyncio.set_event_loop(asyncio.new_event_loop())


def test_monitor_calls_run_on_the_calling_thread_without_a_running_loop(loop) -> None:
    seen = {}

    def call() -> str:
        seen["thread"] = threading.current_thread()
        try:
            asyncio.get_running_loop()
            seen["running"] = True
        except RuntimeError:
            seen["running"] = False
        seen["loop"] = asyncio.get_event_loop()
        return "answer"

    async def main() -> str:
        return await asyncio.get_running_loop().run_in_executor(None, call)

    with sdk_speed.fast_registration():
        assert loop.run_until_complete(main()) == "answer"
    assert seen["thread"] is threading.current_thread() and seen["running"] is False
    assert seen["loop"] is not loop  # a loop of its own, as a worker thread's


def test_an_error_in_a_monitor_call_reaches_the_awaiting_code(loop) -> None:
    async def main() -> None:
        await asyncio.get_running_loop().run_in_executor(None, lambda: 1 / 0)

    with sdk_speed.fast_registration(), pytest.raises(ZeroDivisionError):
        loop.run_until_complete(main())


def test_the_collector_is_paused_during_a_render_and_restored_after() -> None:
    states = []

    def program() -> None:
        states.append(gc.isenabled())
        pulumi.CustomResource("aws:ec2/securityGroup:SecurityGroup", "sg", {"description": "x"})

    assert gc.isenabled()
    rendering = render({}, program=program)
    assert rendering.error is None and [r.name for r in rendering.custom_resources] == ["sg"]
    assert states == [False] and gc.isenabled()
    # And the SDK's own functions are back.
    assert sdk_resource._get_stack_trace is not sdk_speed.stack_trace


def test_a_render_registers_the_same_resources_with_and_without_the_equivalents(monkeypatch) -> None:
    from contextlib import nullcontext

    from gpulease.review import render as render_module

    fast = render_module.render_stack_file(render_module.PROJECT_ROOT / "stacks" / "Pulumi.aws-debug-t4.yaml")
    monkeypatch.setattr(render_module, "fast_registration", nullcontext)
    slow = render_module.render_stack_file(render_module.PROJECT_ROOT / "stacks" / "Pulumi.aws-debug-t4.yaml")
    assert fast.error is None and slow.error is None

    def shape(rendering):
        return sorted((r.urn, r.parent, tuple(sorted(r.dependencies)), repr(sorted(r.inputs.items())))
                      for r in rendering.resources)

    assert shape(fast) == shape(slow)


def test_the_captured_inputs_are_the_registration_request_deserialized() -> None:
    # The capture keeps the plain form of the inputs the SDK's monitor deserialized for the mocks
    # (``captured_values.InputRecorder``): the same values as deserializing each request's properties again.
    from pulumi.runtime import rpc

    from gpulease.review import render as render_module
    from gpulease.review.captured_values import plain

    rendering = render_module.render_stack_file(render_module.PROJECT_ROOT / "stacks" / "Pulumi.aws-lora-7b.yaml")
    assert rendering.error is None and len(rendering.resources) > 20
    for r in rendering.resources:
        assert r.inputs == plain(rpc.deserialize_properties(r.input_struct)), r.urn
    assert any(r.inputs.get("tags") for r in rendering.resources)


def test_the_collector_is_paused_while_the_pack_judges_and_restored_after() -> None:
    from pulumi_policy import ResourceValidationPolicy

    from gpulease.review.policy_runner import PolicyRunner

    states = []

    def validate(args, report) -> None:
        states.append(gc.isenabled())

    runner = PolicyRunner([ResourceValidationPolicy("records-collector", "records", validate)])
    rendering = render({}, program=lambda: pulumi.CustomResource("aws:ec2/securityGroup:SecurityGroup", "sg", {}))
    assert gc.isenabled()
    runner.analyze(rendering)
    assert states == [False] and gc.isenabled()
