"""Standard output that ends well when its reader goes away or the disk is full.

- A closed pipe (``gpulease plan | head -1``, ``gpulease schema | true``): the reader has what it wanted, and the
  answer stands. The first write that finds the pipe closed points the stream at ``os.devnull`` (the pattern of
  the Python docs' "Note on SIGPIPE", https://docs.python.org/3/library/signal.html#note-on-sigpipe), every later
  write goes there, and the command runs to its end and exits with its own code, without a word (rich's own
  handling, ``Console.on_broken_pipe``, would exit 1; it never sees the error, the stream swallows it).
- Any other write error (``ENOSPC`` of ``>/dev/full``, ``EIO``): the answer did not reach its file, so the
  command fails: ``OutputWriteError`` reaches ``main._run``, which says so in one line on stderr, exit 1.

Installed only when ``gpulease`` is the process's own command (``main(None)``), never under a caller's stream."""

from __future__ import annotations

import errno
import os
import sys
from typing import Any


class OutputWriteError(BaseException):
    """Standard output could not be written (not a closed pipe). A ``BaseException``, so a command's broad
    ``except Exception`` around its printing cannot take it for its own failure and go on."""

    def __init__(self, cause: OSError):
        super().__init__(cause)
        self.cause = cause

    def line(self) -> str:
        name = errno.errorcode.get(self.cause.errno or 0, "")
        why = self.cause.strerror or str(self.cause)
        return f"cannot write the output to standard output: {why}" + (f" ({name})" if name else "")


def _to_devnull(stream: Any) -> None:
    """Point the stream's file descriptor at ``os.devnull``: whatever is still buffered, and the interpreter's
    last flush at exit, go there instead of failing again."""
    try:
        fd = stream.fileno()
    except (OSError, ValueError, AttributeError):
        return
    devnull = os.open(os.devnull, os.O_WRONLY)
    try:
        os.dup2(devnull, fd)
    finally:
        os.close(devnull)


class GuardedStdout:
    """A text stream in front of the real one: ``write``/``flush`` as above, everything else passed through."""

    def __init__(self, stream: Any):
        self._stream = stream
        self.closed_pipe = False

    def _guard(self, work: Any, *args: Any) -> Any:
        if self.closed_pipe:
            try:
                return work(*args)  # into os.devnull now
            except OSError:
                return None
        try:
            return work(*args)
        except BrokenPipeError:
            self.closed_pipe = True
            _to_devnull(self._stream)
            return None
        except OSError as exc:
            _to_devnull(self._stream)
            raise OutputWriteError(exc) from None

    def write(self, text: str) -> int:
        self._guard(self._stream.write, text)
        return len(text)

    def writelines(self, lines: Any) -> None:
        for line in lines:
            self.write(line)

    def flush(self) -> None:
        self._guard(self._stream.flush)

    def __getattr__(self, name: str) -> Any:
        return getattr(self._stream, name)


def install() -> GuardedStdout:
    """Put the guard in front of ``sys.stdout`` (once)."""
    if not isinstance(sys.stdout, GuardedStdout):
        sys.stdout = GuardedStdout(sys.stdout)  # type: ignore[assignment]
    return sys.stdout  # type: ignore[return-value]


def finish() -> None:
    """Flush what the command printed (a full disk shows at the flush), through the guard."""
    stream = sys.stdout
    if isinstance(stream, GuardedStdout):
        stream.flush()
