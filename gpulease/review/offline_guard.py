"""While the review runs a skipped apply's callback offline, the callback can change nothing outside the process.

The callback sees a value it never sees at ``pulumi up`` (the unknown marker), so what it does besides registering
(writing a file named after its value, deleting one, running a command, connecting somewhere) must not happen
during ``gpulease plan``. ``refusing_side_effects`` installs one audit hook (``sys.addaudithook``, once per process:
a hook cannot be removed) that raises ``PermissionError`` for the events below while a context variable is set.
It is set around the call of the callback, so code the callback schedules to run later on the event loop (a task,
``call_soon``: asyncio copies the context) is under it too; it is cleared again while the SDK registers a resource
the callback constructs (its registration tasks start from that context), and it is never set anywhere else, so
the review's own writes (its report, a render's stream to the reviewer, caches) are never refused. A thread the
callback starts begins with an empty context: what it does is not refused (a known limit). The event names and
arguments are Python's (https://docs.python.org/3/library/audit_events.html): ``open`` is refused only for writing
(a mode with ``w``, ``a``, ``x`` or ``+``, or write/create/truncate flags), ``mmap.__new__`` unless the mapping is
anonymous or read-only (``ACCESS_READ``), and every ``ctypes.*`` event (``ctypes.dlopen``, ``ctypes.dlsym``,
``ctypes.call_function``, ...: foreign code does what no event names).

Calls that raise no audit event are wrapped instead, while the context variable is set: ``os.mkfifo``,
``os.mknod`` and ``signal.pidfd_send_signal`` (the wrapper replaces the module attribute when this module is
imported, before the program runs, so ``from os import mkfifo`` in the program gets it too; ``posix.mkfifo``
called by that name does not).

Known limits, which no hook sees (Python raises no event for them):

- a write through a file descriptor, mapping or socket the program opened before the callback runs
  (``os.write(fd, ...)``, ``m[0:1] = b"x"`` on an ``mmap`` made before, ``sock.send``): the callback can change
  what those refer to;
- what a thread the callback starts does (its context is empty);
- ``posix.mkfifo``/``posix.mknod`` and ``_signal.pidfd_send_signal`` called by their C module's name.

A refused call raises inside the callback: it then counts as a callback that raised, and the static rule decides
(``skipped_applies``). Importing a module inside the callback still works: the import system ignores an
``OSError`` when it cannot write a bytecode cache.
"""

from __future__ import annotations

import contextvars
import mmap
import os
import signal
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

REFUSED = frozenset({
    "os.remove", "os.rename", "os.mkdir", "os.rmdir", "os.truncate", "os.chmod", "os.chown", "os.link",
    "os.symlink", "os.utime", "os.chdir", "os.chflags", "os.lchflags", "os.setxattr", "os.removexattr",
    "os.putenv", "os.unsetenv", "os.system", "os.exec", "os.posix_spawn", "os.spawn", "os.fork", "os.forkpty",
    "os.kill", "os.killpg", "os.startfile", "subprocess.Popen", "pty.spawn", "shutil.rmtree", "shutil.copyfile",
    "shutil.copymode", "shutil.copystat", "shutil.copytree", "shutil.move", "shutil.chown", "shutil.make_archive",
    "shutil.unpack_archive", "socket.connect", "socket.bind", "socket.sendto", "socket.sendmsg",
    "socket.getaddrinfo", "socket.gethostbyname", "socket.gethostbyaddr", "urllib.Request", "ftplib.connect",
    "smtplib.connect", "http.client.connect", "webbrowser.open", "sqlite3.connect", "tempfile.mkstemp",
    "tempfile.mkdtemp", "msvcrt.locking", "winreg.SetValue", "winreg.CreateKey", "winreg.DeleteKey",
    "winreg.DeleteValue", "signal.pthread_kill", "socket.sethostname", "resource.setrlimit", "resource.prlimit",
    "fcntl.flock", "fcntl.lockf", "fcntl.ioctl", "fcntl.fcntl", "os.lockf", "syslog.openlog", "syslog.syslog",
})
REFUSED_PREFIXES = ("ctypes.",)
WRITE_FLAGS = os.O_WRONLY | os.O_RDWR | os.O_CREAT | os.O_APPEND | os.O_TRUNC

_active: contextvars.ContextVar[bool] = contextvars.ContextVar("gpulease_offline_callback", default=False)
_installed = False


def _writes(args: tuple[Any, ...]) -> bool:
    mode = args[1] if len(args) > 1 else None
    flags = args[2] if len(args) > 2 else None
    if isinstance(flags, int) and flags & WRITE_FLAGS:
        return True
    return isinstance(mode, str) and any(c in mode for c in "wax+")


def _hook(event: str, args: tuple[Any, ...]) -> None:
    if not _active.get():
        return
    if event in REFUSED or event.startswith(REFUSED_PREFIXES) or (event == "open" and _writes(args)) or (
            event == "mmap.__new__" and _maps_for_writing(args)):
        raise PermissionError(f"{event} is refused while an apply's callback runs offline under gpulease plan")


def _maps_for_writing(args: tuple[Any, ...]) -> bool:
    fileno = args[0] if args else -1
    access = args[2] if len(args) > 2 else 0
    return fileno != -1 and access != mmap.ACCESS_READ


def _refusing(module: Any, name: str) -> None:
    """Wrap ``module.name`` (a call that raises no audit event) so that it is refused like an event."""
    original = getattr(module, name, None)
    if original is None or getattr(original, "_gpulease_refusing", False):
        return

    def call(*args: Any, **kwargs: Any) -> Any:
        if _active.get():
            raise PermissionError(f"{module.__name__}.{name} is refused while an apply's callback runs offline "
                                  "under gpulease plan")
        return original(*args, **kwargs)

    call._gpulease_refusing = True  # type: ignore[attr-defined]
    setattr(module, name, call)


for _module, _name in ((os, "mkfifo"), (os, "mknod"), (signal, "pidfd_send_signal")):
    _refusing(_module, _name)


def _install() -> None:
    global _installed
    if not _installed:
        sys.addaudithook(_hook)
        _installed = True


@contextmanager
def refusing_side_effects() -> Iterator[None]:
    """Refuse the module doc's events in this context for the duration (nesting keeps the outer state)."""
    _install()
    token = _active.set(True)
    try:
        yield
    finally:
        _active.reset(token)


@contextmanager
def allowing_side_effects() -> Iterator[None]:
    """The review's own code called from inside a callback (registration, mocks): never refused."""
    token = _active.set(False)
    try:
        yield
    finally:
        _active.reset(token)
