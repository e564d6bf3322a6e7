"""Moving a file into place without ever replacing one, and the errors one object's fetch may end with."""

from __future__ import annotations

import ctypes
import ctypes.util
import errno
import os

from boto3.exceptions import RetriesExceededError, S3TransferFailedError
from botocore.exceptions import BotoCoreError, ClientError

from gpulease.core.errors import UserError


class ObjectFetchError(UserError):
    """One object's download failed (after the SDK's own retries); the other objects can still be fetched."""


FETCH_ERRORS: tuple[type[BaseException], ...] = (ClientError, BotoCoreError, RetriesExceededError,
                                                 S3TransferFailedError, OSError)
"""What one object's download may fail with that leaves the others fetchable (botocore retried the transient)."""

RENAME_NOREPLACE = 1
AT_FDCWD = -100
_libc = None
_missing = False


def noreplace_rename(src: str, name: str, dir_fd: int) -> bool:
    """``renameat2(AT_FDCWD, src, dir_fd, name, RENAME_NOREPLACE)``: True when done, False when the kernel or the
    file system lacks it (the caller links instead); ``FileExistsError`` when ``name`` exists."""
    global _libc, _missing
    if _missing:
        return False
    if _libc is None:
        found = ctypes.util.find_library("c")
        lib = ctypes.CDLL(found, use_errno=True) if found else None
        if lib is None or not hasattr(lib, "renameat2"):
            _missing = True
            return False
        _libc = lib
    rc = _libc.renameat2(AT_FDCWD, os.fsencode(src), dir_fd, os.fsencode(name), RENAME_NOREPLACE)
    if rc == 0:
        return True
    err = ctypes.get_errno()
    if err in (errno.ENOSYS, errno.EINVAL, errno.ENOTSUP):
        return False
    raise OSError(err, os.strerror(err), name)
