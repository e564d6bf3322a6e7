"""How the Alibaba Cloud SDKs fail, in the terms the sweep needs: gone, unreachable, or an error to report.

tea-openapi raises ``ClientException`` (4xx), ``ServerException`` (5xx) and ``ThrottlingException`` (all
``TeaException``s carrying the API's error ``code``), and ``UnretryableException`` wrapping a ``RetryError`` when
the transport failed on every attempt (refused, reset, timed out). OSS v2 raises its own ``BaseError``s.
"""

from __future__ import annotations

import re

from alibabacloud_oss_v2.exceptions import BaseError as OssError
from darabonba.exceptions import RetryError, UnretryableException
from Tea.exceptions import TeaException

from gpulease.inventory.acting import ApiErrors
from gpulease.inventory.alicloud_clients import AlicloudCredentialsError

SDK_ERRORS: tuple[type[BaseException], ...] = (TeaException, OssError, RetryError)
CREDENTIAL_ERRORS: tuple[type[BaseException], ...] = (AlicloudCredentialsError,)

# ECS and VPC ids: i-..., d-..., s-..., m-..., eip-... (letters and digits after the dash).
ID_PATTERN = re.compile(r"\b(?:i|d|s|m|eip)-[0-9a-z]+\b")


def code(exc: BaseException) -> str:
    return str(getattr(exc, "code", "") or "")


def not_found(exc: BaseException) -> bool:
    """The API says the resource (or one of the ids asked for) does not exist: ``Invalid*Id.NotFound``."""
    return code(exc).endswith("NotFound")


def unreachable(exc: BaseException) -> bool:
    """The endpoint could not be reached on any attempt (no API answer at all)."""
    inner = getattr(exc, "inner_exception", None)
    return isinstance(exc, RetryError) or (isinstance(exc, UnretryableException) and isinstance(inner, RetryError))


def error_text(exc: BaseException) -> str:
    """One line: the API's code and message, or the transport failure."""
    if unreachable(exc):
        inner = getattr(exc, "inner_exception", None) or exc
        text = f"endpoint unreachable: {getattr(inner, 'message', inner)}"
    elif code(exc):
        text = f"{code(exc)}: {getattr(exc, 'message', '') or exc}"
    else:
        text = f"{type(exc).__name__}: {exc}"
    text = " ".join(text.split())
    return text if len(text) <= 400 else text[:400] + "..."


ALICLOUD_ERRORS = ApiErrors(types=SDK_ERRORS, not_found=not_found, text=error_text, id_pattern=ID_PATTERN)
