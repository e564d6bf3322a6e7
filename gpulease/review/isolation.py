"""Each render in a process of its own: a program's modules, globals and crashes never reach the next render.

A Python program imports its helper modules once per interpreter. Rendering two stacks of one project in one
process would reuse the first stack's modules (a module that creates resources when imported creates them only
once), and two projects with a module of the same name (``iam.py``), or with a ``components/`` or ``policies/``
folder like this kit's own packages, would see each other's. So every render runs in a child process forked
from the reviewer, which has imported only the review engine and the SDKs, never a program's modules (the
child forgets any it inherits, see ``_forget_program_modules``), and ends with the child. Forking keeps the
SDKs imported, so a render costs no interpreter start-up; where ``fork`` is missing the render runs in this
process (``isolated`` is then False and the report says nothing about it: the kit's own stacks need none).

The child streams each resource to the reviewer as it is registered (length-prefixed pickles in an unlinked
temporary file, so the child never blocks on a reader), then a final record with the exports and the error. So
a program that crashes the interpreter, calls ``os._exit`` or hangs past the time limit still has what it
registered reviewed, marked partial, with what happened as its error.

The program's standard output goes to the reviewer's standard error: a ``print`` in a program must not corrupt
``gpulease plan --format json``.
"""

from __future__ import annotations

import asyncio
import faulthandler
import gc
import importlib
import os
import pickle
import select
import signal
import struct
import sys
import sysconfig
import tempfile
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from gpulease.review.program_secrets import ProgramSecret
from gpulease.review.render import CapturedResource, Rendering

DEFAULT_TIMEOUT_S = 600.0
"""A render that runs longer is stopped. The kit's sweep of 100 experiments renders in a few seconds."""

_HEADER = struct.Struct("!I")
_KEEP = ("gpulease",)  # the review engine: the child renders with the reviewer's own modules


def available() -> bool:
    return hasattr(os, "fork")


def _library_dirs() -> tuple[str, ...]:
    paths = sysconfig.get_paths()
    dirs = {paths[k] for k in ("stdlib", "platstdlib", "purelib", "platlib") if paths.get(k)}
    dirs |= {str(Path(d).resolve()) for d in dirs}
    return tuple(d.rstrip(os.sep) + os.sep for d in dirs)


def _is_reviewers(name: str, module: Any, libraries: tuple[str, ...]) -> bool:
    """A module the reviewer may share with a program: the interpreter's, an installed library's, or the review
    engine's own (``gpulease``); anything else may be a program's, or a kit folder a program's may shadow."""
    if name == "__main__" or name.partition(".")[0] in _KEEP:
        return True
    where = getattr(module, "__file__", None)
    if where is None:
        paths = list(getattr(module, "__path__", None) or [])  # a namespace package: its folders
        if not paths:
            return True  # built in
        where = paths[0]
    return str(where).startswith(libraries)


def _forget_program_modules() -> dict[str, Any]:
    """Forget every imported module that is neither the interpreter's, nor an installed library's, nor the review
    engine's: a program's own modules, and this kit's program and pack, which a program's folders of the same
    names (``components``, ``policies``) must not meet. Returns what was forgotten (``_restore_reviewer_modules``)."""
    libraries = _library_dirs()
    forgotten = {}
    for name, module in list(sys.modules.items()):
        if not _is_reviewers(name, module, libraries):
            forgotten[name] = sys.modules.pop(name)
    importlib.invalidate_caches()
    return forgotten


def _restore_reviewer_modules(forgotten: dict[str, Any]) -> None:
    """After the program: forget its modules and bring back the reviewer's, so that the pack judging the
    rendering in this child imports its own modules, never a program's of the same name."""
    libraries = _library_dirs()
    for name, module in list(sys.modules.items()):
        if name not in forgotten and not _is_reviewers(name, module, libraries):
            del sys.modules[name]
    sys.modules.update(forgotten)
    importlib.invalidate_caches()


def _sdk_modules() -> list[str]:
    """The provider SDK modules imported so far (what the next render will likely import again)."""
    return sorted(name for name in sys.modules if name.partition(".")[0].startswith(("pulumi_", "pulumiverse_")))


def warm(modules: list[str]) -> None:
    """Load SDK modules in the reviewer before the next fork, so that the next child inherits them.

    Through attribute access from the package (``pulumi_aws.budgets.budget``), as a program reaches them: the
    SDKs' packages are lazy modules (``pulumi._utils.lazy_import``), and importing a submodule by its dotted name
    first runs the package's ``__init__`` in the middle of that import, which leaves the package without the
    names its ``__init__`` re-exports (``module 'pulumi_aws.budgets' has no attribute 'Budget'``)."""
    for name in modules:
        root, *parts = name.split(".")
        if not root.startswith(("pulumi_", "pulumiverse_")):
            continue
        try:
            module: Any = importlib.import_module(root)
            for part in parts:
                if part.startswith("_"):
                    break  # private modules come with their package
                module = getattr(module, part)
                getattr(module, "__name__", None)  # a lazy module loads on its first attribute
        except Exception:
            continue


@dataclass
class Outcome:
    """What came back from a child."""

    resources: list[CapturedResource] = field(default_factory=list)
    outputs: dict[str, Any] = field(default_factory=dict)
    error: str | None = None
    finished: bool = False  # the child's final record arrived
    sdk_modules: list[str] = field(default_factory=list)
    judged: Any = None  # what ``judge`` returned in the child (None: it did not run, or failed)
    unseen: bool = False  # ``Rendering.unseen``
    secrets: set[str] = field(default_factory=set)  # each secret text the program made, streamed as made


def _write(fd: int, record: tuple[str, Any]) -> None:
    data = pickle.dumps(record, protocol=pickle.HIGHEST_PROTOCOL)
    view = memoryview(_HEADER.pack(len(data)) + data)
    while view:
        written = os.write(fd, view)
        view = view[written:]


def _read(fd: int) -> list[tuple[str, Any]]:
    os.lseek(fd, 0, os.SEEK_SET)
    chunks = []
    while chunk := os.read(fd, 1 << 20):
        chunks.append(chunk)
    data = b"".join(chunks)
    records, offset = [], 0
    while offset + _HEADER.size <= len(data):
        (size,) = _HEADER.unpack_from(data, offset)
        end = offset + _HEADER.size + size
        if end > len(data):
            break  # the child died while writing this one
        try:
            records.append(pickle.loads(data[offset + _HEADER.size:end]))
        except Exception:
            break
        offset = end
    return records


class Child:
    """One forked render: ``start`` it, do other work, then ``wait`` for its outcome.

    ``work(sink)`` renders (``sink`` receives each resource as it is registered); then ``judge(rendering)`` runs in
    the same child with the reviewer's modules back (the policies and the cost: the SDK modules the program
    imported are needed again to judge it, and are already there), and what it returns comes back pickled."""

    def __init__(self, work: Callable[[Callable[[CapturedResource], None]], Rendering], timeout: float,
                 judge: Callable[[Rendering], Any] | None = None):
        self.timeout = timeout
        self.judge = judge
        self.started = time.monotonic()
        self.fd, self.path = tempfile.mkstemp(prefix="gpulease-render-")
        os.unlink(self.path)
        sys.stdout.flush()
        sys.stderr.flush()
        self.pid = os.fork()
        if self.pid == 0:  # pragma: no cover - runs in the child, measured by the tests through its effects
            self._child(work)

    def _child(self, work: Callable[[Callable[[CapturedResource], None]], Rendering]) -> None:
        code = 0
        try:
            signal.signal(signal.SIGINT, signal.SIG_DFL)
            # A one-shot process: its heap goes with it. The cyclic collector would walk the reviewer's inherited
            # objects and every future of the render again and again for nothing (and touch the pages shared with
            # the reviewer); a program allocating without end is bounded by the time limit as before.
            gc.freeze()
            gc.disable()
            if faulthandler.is_enabled():  # a crashing program is reported as such, not with a dump of our stack
                faulthandler.disable()
            os.dup2(2, 1)  # the program's prints go to standard error
            sys.stdout = sys.stderr
            # A fresh event loop: the reviewer's (its executor threads do not exist in a forked child) is not used.
            asyncio.set_event_loop(asyncio.new_event_loop())
            forgotten = _forget_program_modules()
            rendering = work(lambda item: _write(self.fd, ("secret", str(item)) if isinstance(item, ProgramSecret)
                                                 else ("resource", item)))
            judged = None
            if self.judge is not None:
                _restore_reviewer_modules(forgotten)
                try:
                    judged = self.judge(rendering)
                except Exception:
                    judged = None  # the reviewer judges the streamed resources itself
            _write(self.fd, ("end", {"outputs": rendering.outputs, "error": rendering.error, "unseen": rendering.unseen,
                                     "sdk_modules": _sdk_modules(), "judged": judged}))
        except BaseException as exc:
            try:
                _write(self.fd, ("end", {"outputs": {}, "error": f"{type(exc).__name__}: {exc}", "sdk_modules": []}))
            except BaseException:
                code = 70
        finally:
            os._exit(code)

    def wait(self) -> Outcome:
        """The child's outcome; a child past its time is killed, and what it registered is kept."""
        status, timed_out = self._reap()
        try:
            records = _read(self.fd)
        finally:
            os.close(self.fd)
        outcome = Outcome()
        for kind, payload in records:
            if kind == "resource":
                outcome.resources.append(payload)
            elif kind == "secret":
                outcome.secrets.add(payload)
            elif kind == "end":
                outcome.outputs = payload.get("outputs") or {}
                outcome.error = payload.get("error")
                outcome.sdk_modules = payload.get("sdk_modules") or []
                outcome.judged = payload.get("judged")
                outcome.unseen = bool(payload.get("unseen"))
                outcome.finished = True
        if timed_out or not outcome.finished:
            outcome.judged = None
        if timed_out:
            outcome.error = (f"the program did not finish within {self.timeout:g} s and was stopped (gpulease plan "
                             "--timeout SECONDS allows longer); what it registered until then is reviewed")
        elif not outcome.finished:
            outcome.error = _ended(status, outcome.resources)
        return outcome

    def kill(self) -> None:
        try:
            os.kill(self.pid, signal.SIGKILL)
            os.waitpid(self.pid, 0)
        except (ProcessLookupError, ChildProcessError):
            pass
        os.close(self.fd)

    def _reap(self) -> tuple[int, bool]:
        deadline = self.started + self.timeout
        try:
            pidfd = os.pidfd_open(self.pid) if hasattr(os, "pidfd_open") else None
        except OSError:
            pidfd = None
        try:
            while True:
                pid, status = os.waitpid(self.pid, os.WNOHANG)
                if pid:
                    return status, False
                remaining = deadline - time.monotonic()
                if remaining <= 0:
                    os.kill(self.pid, signal.SIGKILL)
                    return os.waitpid(self.pid, 0)[1], True
                if pidfd is not None:
                    select.select([pidfd], [], [], remaining)
                else:
                    time.sleep(min(remaining, 0.005))
        except BaseException:
            # Interrupted (Ctrl-C): the child goes too.
            try:
                os.kill(self.pid, signal.SIGKILL)
                os.waitpid(self.pid, 0)
            except ChildProcessError:
                pass
            raise
        finally:
            if pidfd is not None:
                os.close(pidfd)


def _ended(status: int, resources: list[CapturedResource]) -> str:
    """Why the child ended before its last record, and what of the program's reached the review: partial (exit 3)
    when anything did, not reviewed (exit 2) when nothing did (``Rendering.partial``)."""
    if os.WIFSIGNALED(status):
        sig = os.WTERMSIG(status)
        try:
            name = signal.Signals(sig).name
        except ValueError:
            name = f"signal {sig}"
        how = f"the program's process was killed by {name} before it finished"
    else:
        code = os.WEXITSTATUS(status) if os.WIFEXITED(status) else status
        how = f"the program ended its process (exit code {code}, e.g. os._exit) before it finished"
    return f"{how}; {rendered(resources)}"


def rendered(resources: list[CapturedResource], shown: int = 5) -> str:
    """What a render that stopped part way registered, in one clause."""
    if not resources:
        return "nothing it registered reached the review"
    names = ", ".join(f"{r.type} {r.name!r}" for r in resources[:shown])
    more = f" and {len(resources) - shown} more" if len(resources) > shown else ""
    return f"what it registered until then is reviewed: {len(resources)} resources ({names}{more})"


def rendering_of(outcome: Outcome, *, project: str, stack: str, config: dict[str, Any]) -> Rendering:
    return Rendering(project=project, stack=stack, config=config, resources=outcome.resources,
                     outputs=outcome.outputs, error=outcome.error, unseen=outcome.unseen,
                     secrets=set(outcome.secrets))
