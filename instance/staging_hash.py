#!/usr/bin/env python3
"""Hashing a staged file in order while its ranges are written in any order (standard library only): bytes written
at the hashed frontier are hashed from the buffer they arrived in; bytes a later range wrote ahead of it are read
back from the part file (``preadv``, recently written, so from the page cache) when the frontier reaches them, once.
The part file's descriptor is ``fd``, set by whoever holds the file open (staging opens a part only while it is
being written)."""

from __future__ import annotations

import hashlib
import os
import threading

try:
    from instance.staging_files import StagingError
except ImportError:  # on the instance: installed next to this file
    from staging_files import StagingError  # type: ignore[no-redef]

READ_BACK_BYTES = 4 * 1024 * 1024  # bytes read back (and hashed) per preadv of the part file


class OrderedHash:
    """SHA-256 (and a git blob SHA-1) over a file's bytes in order, fed as ranges are written in any order."""

    def __init__(self, fd: int | None, blob_size: int | None) -> None:
        self.fd = fd
        self.sha256 = hashlib.sha256()
        self.sha1 = hashlib.sha1(f"blob {blob_size}\0".encode()) if blob_size is not None else None  # git ids
        self.frontier = 0
        self.pending: dict[int, int] = {}
        self.busy = False
        self.lock = threading.Lock()

    def wrote(self, offset: int, view: memoryview | None, end: int | None = None) -> None:
        """Bytes ``[offset, end)`` are in the file (``view``: the same bytes, when still in memory)."""
        end = offset + len(view) if view is not None else end
        assert end is not None
        with self.lock:
            if self.busy or offset != self.frontier:
                if end > offset:
                    self.pending[offset] = end
                return
            self.busy = True
        try:
            if view is not None:
                self._update(view)
            else:
                self._read_back(offset, end)
            self.frontier = end
        finally:
            self._drain()

    def _drain(self) -> None:
        while True:
            with self.lock:
                end = self.pending.pop(self.frontier, None)
                if end is None:
                    self.busy = False
                    return
                while end in self.pending:  # the receives that followed it: read back as one range
                    end = self.pending.pop(end)
            try:
                self._read_back(self.frontier, end)
            except BaseException:
                with self.lock:
                    self.busy = False
                raise
            self.frontier = end

    def _update(self, view: memoryview) -> None:
        self.sha256.update(view)
        if self.sha1 is not None:
            self.sha1.update(view)

    def _read_back(self, start: int, end: int) -> None:
        block = memoryview(bytearray(min(READ_BACK_BYTES, end - start)))  # one buffer for the whole range
        if self.fd is None:
            raise StagingError("the part file was closed before its bytes were hashed")
        while start < end:
            n = os.preadv(self.fd, [block[:min(len(block), end - start)]], start)
            if not n:
                raise StagingError("the part file is shorter than what was written to it")
            self._update(block[:n])
            start += n
