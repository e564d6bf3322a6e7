"""The SDK's pending registrations and outputs after a program error: what was registered is reviewed, what is
left pending is discarded without asyncio's warnings."""

from __future__ import annotations

from pulumi.runtime import settings
from pulumi.runtime.settings import SETTINGS
from pulumi.runtime.sync_await import _sync_await


def finish_registrations() -> None:
    """After a program error: let the registrations it had already made reach the monitor, so that they are
    reviewed. The SDK stops waiting for them at the first failed call (``wait_for_rpcs`` re-raises it), which
    would drop a resource registered just before a failing lookup. A registration that fails in turn (it waited
    on what failed) is left out, as under the engine."""
    manager = settings._get_rpc_manager()
    while manager.rpcs:
        call = manager.rpcs.pop()
        try:
            _sync_await(call)
        except BaseException:  # the program's error is already the rendering's
            continue


def discard_pending_outputs() -> None:
    with SETTINGS.lock:
        pending = list(SETTINGS.outputs)
        SETTINGS.outputs.clear()
    for task in pending:
        if task.done():
            if not task.cancelled():
                task.exception()  # retrieved, so asyncio does not log it as never retrieved
        else:
            task.cancel()
