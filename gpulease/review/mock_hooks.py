"""Resource hooks under mocks: registered by name in the render, never served.

A program's ``pulumi.ResourceHook`` registers itself with the engine through the SDK's callback server (a gRPC
server on 127.0.0.1 that the engine calls back when it runs the hook, ``pulumi/runtime/_callbacks.py``, SDK 3.272);
the SDK's mock monitor answers ``RegisterResourceHook`` with nothing and would still start that server for every
render. Nothing calls a hook under mocks (no resource is created, updated or deleted), so while a program renders
the registration resolves at once and the hook is kept by name (``HookRecorder``); the resources bound to hooks
carry their names as registered (``ResourceHooksBinding``: ``CapturedResource.hooks``)."""

from __future__ import annotations

import asyncio
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

from pulumi import resource_hooks as sdk_hooks

HOOK_KINDS = ("before_create", "after_create", "before_update", "after_update", "before_delete", "after_delete")


class HookRecorder:
    """The hooks a program registered, by name (the engine's key for them)."""

    def __init__(self) -> None:
        self.hooks: dict[str, Any] = {}

    def register(self, hook: Any) -> asyncio.Future[None]:
        self.hooks[hook.name] = hook
        done: asyncio.Future[None] = asyncio.get_event_loop().create_future()
        done.set_result(None)
        return done


@contextmanager
def recording_hooks(recorder: HookRecorder) -> Iterator[None]:
    """Hook registrations go to ``recorder`` while the program renders (``ResourceHook.__init__`` calls the name
    ``register_resource_hook`` of ``pulumi.resource_hooks``)."""
    saved = sdk_hooks.register_resource_hook
    sdk_hooks.register_resource_hook = recorder.register  # type: ignore[assignment]
    try:
        yield
    finally:
        sdk_hooks.register_resource_hook = saved


def bound_hooks(binding: Any) -> dict[str, list[str]]:
    """The hook names of a registration's ``ResourceHooksBinding``, per kind, only the kinds that have any."""
    return {kind: list(names) for kind in HOOK_KINDS if (names := getattr(binding, kind, None))}
