"""Applies a preview does not run: the review runs them itself, offline, with the engine's unknown marker.

``Output.apply`` runs its callback only once the output's value is known (``pulumi/output.py``, ``apply``'s
``run``: ``if not (is_known or run_with_unknowns)`` returns an unknown output without calling it); the engine's
preview skips those callbacks in the same way. A resource registered inside such a callback would never be
registered during the review, which would report it as "0 resources, $0.00" and pass.

``recording_skipped_applies`` watches every ``apply`` the program calls during preview. When the output turns out
unknown (so the SDK skipped the callback), the review runs the callback once itself, under the same mocks and
site recording, with ``rpc.UNKNOWN`` (the sentinel string the capture reads as unknown) as the value:

- a resource it registers is captured and judged like any other (a field holding the marker makes the review
  partial through ``unknown_compute``), and one line goes to the render's errors, which makes the review partial
  (exit 3): "resource aws:ec2/instance:Instance 'gpu' was registered by an apply run offline with an unknown value
  (at file:line of the apply)", since at ``pulumi up`` the callback sees another value;
- its return value is discarded: the apply's own output stays unknown for the program (an ``async def``
  callback's coroutine, whose body never runs offline, is closed);
- when it registers nothing, raises, or the budget is spent (each callback once, ``MAX_RUNS`` in all), the static
  rule below decides (a callback that registers nothing for the marker may still register for the real value:
  ``if env == "prod": ...``):
  a callback that *may register resources* makes the review partial ("an apply on a value unknown offline was not
  run (at file:line)"), any other is ignored.

The value is what the SDK would hand the callback (``_OfflineRuns.value``): for ``Output.all`` and for
``Output.from_input`` of a dict, list or tuple, the inputs as given, each output its value (or the marker), each
known value nested in them as it is (a program function too). A callback run before (applied to another output)
is not run again: the static rule decides on the new value. An apply the program calls with
``run_with_unknowns`` on a value unknown offline is run by the SDK itself, with the marker; it is judged as an
offline run (``_OfflineRuns.judged``).

Applies called while a callback runs offline (in it, or in what it schedules: a context variable) are judged the
same way: one on an unknown output is run offline in its turn; one on a known output (``Output.from_input(t)``,
an output made before) runs as the SDK runs it, but what it registers is "registered by an apply run offline", and
when it registers nothing the static rule decides too (it may branch on the marker it was handed). An inner apply
never decides for the callback that called it.

The static rule for *may register resources* is ``gpulease/review/static_rule.py``'s: it fails closed (a callback
may register unless all it can reach is on a small allow-list of pure helpers). A callback an SDK module makes and
applies itself (a provider's ``get_*_output`` building its result object, ``Output.json_loads``'s ``loads``) is
noted as the SDK's own when it is applied (``static_rule.sdk_made``): the rule reads only what it closes over.
"""

from __future__ import annotations

import asyncio
import contextvars
import inspect
import sys
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import Any

import pulumi
from pulumi.output import _OutputData
from pulumi.runtime import rpc
from pulumi.runtime.settings import is_dry_run as _sdk_is_dry_run  # the SDK's own, not a recorder's stand-in

from gpulease.review.gathered import gathering_all
from gpulease.review.invoke_sites import failure_site, is_program_file, program_location, site_text
from gpulease.review.offline_guard import allowing_side_effects, refusing_side_effects
from gpulease.review.static_rule import may_register, sdk_made, trust, untrust

__all__ = ["may_register", "recording_skipped_applies"]

# The apply site of the offline run (or of an apply called inside one) whose callback runs in this context: set
# while it runs, copied by asyncio into what it schedules, so an inner apply's callback run later is inside it too.
_offline: contextvars.ContextVar[tuple[str | None] | None] = contextvars.ContextVar("gpulease_offline_apply",
                                                                                     default=None)

MAX_RUNS = 1000
"""Values ``Output.from_input`` makes a known, plain output of (the value itself): such a part is kept as it is."""


def _known(data: asyncio.Future[_OutputData[Any]]) -> bool:
    """Whether an output's data has resolved to a known value (a value the SDK's ``apply`` runs its callback on)."""
    return data.done() and not data.cancelled() and data.exception() is None and data.result().is_known


def skipped_line(site: str | None) -> str:
    where = f" (at {site})" if site else ""
    return (f"an apply on a value unknown offline was not run{where}; resources it may register were not seen; "
            "accepted: resources registered outside apply, or a value known offline")


def registered_line(kind: str, name: str, site: str | None) -> str:
    where = f" (at {site})" if site else ""
    return (f"resource {kind} {name!r} was registered by an apply run offline with an unknown value{where}; at "
            "update the callback sees another value; accepted: resources registered outside apply, or a value "
            "known offline")


def stopped_line(exc: BaseException, site: str | None) -> str:
    where = failure_site(exc) or site
    said = f": {exc}" if str(exc) else ""
    return (f"{where + ': ' if where else ''}{type(exc).__name__}{said} raised by an apply's callback run offline with "
            f"an unknown value{f' (the apply at {site})' if site and site != where else ''}; what it registers was "
            "not seen")


class _OfflineRuns:
    """The callbacks run offline so far, and the apply site of the one running now (runs are synchronous)."""

    def __init__(self, errors: list[str], rendering: Any = None) -> None:
        self.errors = errors
        self.rendering = rendering  # its ``unseen`` is set when a callback may register what was not seen
        self.parts: dict[int, tuple[Any, Any]] = {}  # id(Output.all's output) -> (it, its inputs: ``part``)
        self.ran: dict[int, Any] = {}  # id -> callback, kept alive so that an id is never reused
        self.registered = 0  # resources registered while a callback runs offline (or one called inside it)

    def add(self, line: str) -> None:
        if line not in self.errors:
            self.errors.append(line)

    def unseen(self, site: str | None) -> None:
        self.add(skipped_line(site))
        if self.rendering is not None:
            self.rendering.unseen = True

    def value(self, output: Any) -> Any:
        """What the SDK hands the callback of ``output``'s apply, each unknown part the marker: for ``Output.all``
        a list (or dict), for ``Output.from_input`` of a dict, list or tuple one of the same shape, each known value
        nested in the inputs as it is (a program function among them too). Read once ``output`` resolved, when
        every output it gathers has resolved too."""
        entry = self.parts.get(id(output))
        if entry is None or entry[0] is not output:
            return rpc.UNKNOWN
        return self.resolved(entry[1])

    def resolved(self, raw: Any) -> Any:
        """An input as the SDK lifts it (``Output.from_input``): outputs to their values, through dicts, lists and
        tuples."""
        if isinstance(raw, pulumi.Output):
            data = raw._data
            if not data.done() or data.cancelled() or data.exception() is not None:
                return rpc.UNKNOWN
            return data.result().value if data.result().is_known else self.value(raw)
        if isinstance(raw, dict):
            return {key: self.resolved(item) for key, item in raw.items()}
        if isinstance(raw, list | tuple):
            items = [self.resolved(item) for item in raw]
            return tuple(items) if isinstance(raw, tuple) else items
        return rpc.UNKNOWN if inspect.isawaitable(raw) else raw

    def run(self, func: Callable[[Any], Any], site: str | None, value: Any = rpc.UNKNOWN) -> None:
        """Run ``func`` with the unknown marker once; fall back to the static rule when it cannot be run (or ran
        before, with another value)."""
        if (id(func) in self.ran and self.ran[id(func)] is func) or len(self.ran) >= MAX_RUNS:
            if may_register(func, value):
                self.unseen(site)
            return
        self.ran[id(func)] = func
        token = _offline.set((site,))
        before = self.registered
        try:
            with refusing_side_effects():  # offline_guard: a write, a command, a connection raises
                result = func(value)  # the return value is discarded: the apply's output stays unknown
            if inspect.iscoroutine(result):  # an ``async def`` callback: its body never runs offline
                result.close()
        except Exception:
            if may_register(func, value):
                self.unseen(site)
        except BaseException as exc:  # KeyboardInterrupt, SystemExit: a fault of the program, named at its line
            self.add(stopped_line(exc, site))
        else:
            # Nothing registered with the marker proves nothing for the real value (``if env == "prod": ...``): the
            # static rule still decides whether it may register.
            if self.registered == before and may_register(func, value):
                self.unseen(site)
        finally:
            _offline.reset(token)

    def judged(self, func: Callable[[Any], Any], site: str | None) -> Callable[[Any], Any]:
        """``func``, an apply's callback called while a callback runs offline (on a known output, or with
        ``run_with_unknowns``) or called by the SDK with an unknown value (``run_with_unknowns`` in the program),
        judged like the offline run: what it registers is registered by an apply run offline, and when it
        registers nothing the static rule decides (on the value the SDK hands it: ``Output.all``'s known parts are
        in it, each unknown part ``Output.UNKNOWN``)."""

        def call(value: Any) -> Any:
            token = _offline.set((site,))
            before = self.registered
            try:
                result = func(value)
            except Exception:
                if may_register(func, value):
                    self.unseen(site)
                raise
            finally:
                _offline.reset(token)
            if self.registered == before and may_register(func, value):
                self.unseen(site)
            return result

        return call


@contextmanager
def recording_skipped_applies(errors: list[str], rendering: Any = None) -> Iterator[None]:
    """While the program renders, a skipped apply's callback is run offline with the unknown marker (module doc)."""
    original = pulumi.Output.apply
    original_from_input = pulumi.Output.from_input
    original_init = pulumi.Resource.__init__
    runs = _OfflineRuns(errors, rendering)

    def gathered(result: Any, args: tuple[Any, ...], kwargs: dict[str, Any]) -> None:
        runs.parts[id(result)] = (result, kwargs or list(args))  # its inputs as given (``_OfflineRuns.value``)

    def from_input(value: Any) -> Any:
        result = original_from_input(value)
        if isinstance(value, dict | list | tuple):  # lifted through ``Output.all`` (``_OfflineRuns.value``)
            runs.parts[id(result)] = (result, value)
        return result

    def apply(self: pulumi.Output[Any], func: Callable[[Any], Any], run_with_unknowns: bool = False) -> Any:
        inside = _offline.get() is not None
        dry_run = _sdk_is_dry_run()
        if not inside and not run_with_unknowns and _known(self._data):
            # Its value is known already: the SDK runs the callback, nothing can be skipped, no site is needed.
            return original(self, func, run_with_unknowns)
        caller = sys._getframe(1)
        # The apply's line is read now (the frame moves on); its text is only made for an apply found unknown.
        location = program_location(caller) if inside or dry_run else None
        if inside or (dry_run and not run_with_unknowns):  # the SDK's own callback: a lookup's, ``json_loads``'s
            sdk_made(func, caller)
        if inside:
            called = runs.judged(func, site_text(location))
        elif run_with_unknowns and dry_run and is_program_file(caller.f_code.co_filename):
            # The SDK runs it with the marker at preview (never the SDK's own: ``from_input``'s), so it is judged
            # when the value is unknown.
            judged = runs.judged(func, site_text(location))
            def called(value: Any) -> Any:  # the SDK calls it once this output resolved
                return func(value) if self._data.result().is_known else judged(value)
        else:
            called = func
        result = original(self, called, run_with_unknowns)
        if run_with_unknowns or not dry_run:
            return result

        def decided(data: asyncio.Future[_OutputData[Any]]) -> None:
            # A done-callback of the output's data (no task per apply): it runs before the apply's own output,
            # which awaits the same data and which the SDK waits for at the program's end, can complete; so the
            # offline run's output is tracked before the SDK can find nothing left to wait for.
            if data.cancelled() or data.exception() is not None or data.result().is_known:
                return

            async def offline() -> _OutputData[None]:
                runs.run(func, site_text(location), runs.value(self))
                return _OutputData(resources=set(), value=None, is_known=True, is_secret=False)

            pulumi.Output._from_data(offline())  # type: ignore[attr-defined]

        self._data.add_done_callback(decided)
        return result

    def init(resource: pulumi.Resource, *args: Any, **kwargs: Any) -> None:
        if (active := _offline.get()) is not None:
            runs.registered += 1
            kind, name = (list(args[:2]) + [kwargs.get("t", "?"), kwargs.get("name", "?")][len(args[:2]):])
            runs.add(registered_line(str(kind), str(name), active[0]))
            # The SDK's registration and the review's mocks, never the program's: not refused, and the SDK's own
            # applies in the tasks it starts are not the program's callbacks.
            token = _offline.set(None)
            try:
                with allowing_side_effects():
                    original_init(resource, *args, **kwargs)
            finally:
                _offline.reset(token)
            return
        original_init(resource, *args, **kwargs)

    pulumi.Output.apply = apply  # type: ignore[method-assign]
    pulumi.Output.from_input = staticmethod(from_input)  # type: ignore[method-assign,assignment]
    trust(apply, instead_of=original)
    trust(from_input, instead_of=original_from_input)
    pulumi.Resource.__init__ = init  # type: ignore[method-assign]
    try:
        with gathering_all(gathered):  # Output.all: the one stand-in the secret recorder shares (``gathered``)
            yield
    finally:
        pulumi.Output.apply = original  # type: ignore[method-assign]
        pulumi.Output.from_input = staticmethod(original_from_input)  # type: ignore[method-assign,assignment]
        untrust(apply)
        untrust(from_input)
        pulumi.Resource.__init__ = original_init  # type: ignore[method-assign]
