"""Stack config as the Pulumi engine hands it to a program, and its ``secure:`` values, which no one reads offline.

A ``secure:`` value is ciphertext only the stack's secrets provider can decrypt; the review has no provider. So it
is never handed to the program as a literal (a placeholder text would be judged as if it were the value: a
``[secret]`` instance type is no GPU type, and the review would pass). Read as a secret
(``Config.require_secret``, ``get_secret``, ``get_secret_int`` ...), it is a secret value not known during
preview, like an output of a resource not created yet: a rule that needs it makes the review partial (exit 3)
and the line names the key (``secure_keys_read``). Read as plain text (``Config.require``, ``get``), the program
stops with one line saying the key is secret and cannot be read offline.
"""

from __future__ import annotations

import json
from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from typing import Any

import pulumi

_read: list[str] = []


def engine_config(config: Mapping[str, Any], project: str) -> tuple[dict[str, str], list[str]]:
    """Config as the engine hands it to a program: namespaced keys, structured values as JSON strings; and the
    ``secure:`` keys, which have no value offline (``secure_config``)."""
    out: dict[str, str] = {}
    secrets: list[str] = []
    for key, value in config.items():
        full = key if ":" in key else f"{project}:{key}"
        if isinstance(value, Mapping) and set(value) == {"secure"}:
            secrets.append(full)
        elif isinstance(value, str):
            out[full] = value
        else:
            out[full] = json.dumps(value)
    return out, secrets


class SecureConfigError(pulumi.RunError):
    """A ``secure:`` config value read as plain text."""


def secure_keys_read() -> list[str]:
    """The ``secure:`` keys the program running now read as secrets, in the order read."""
    return list(_read)


def _unknown_secret() -> pulumi.Output[Any]:
    async def value() -> Any:
        return None

    async def known() -> bool:
        return False

    async def secret() -> bool:
        return True

    return pulumi.Output(set(), value(), known(), secret())


@contextmanager
def secure_config(keys: list[str]) -> Iterator[None]:
    """While the program runs, the ``secure:`` ``keys`` read as unknown secrets, or refused when read as text."""
    secure = frozenset(keys)
    config = pulumi.Config
    originals = {name: getattr(config, name) for name in dir(config)
                 if "secret" in name and not name.startswith("__") and callable(getattr(config, name))}
    original_get = config._get

    def plain_get(self: pulumi.Config, key: str, *args: Any, **kwargs: Any) -> Any:
        full = self.full_key(key)
        if full in secure:
            raise SecureConfigError(
                f"configuration {full!r} is a secure: value in the stack file, which cannot be decrypted offline, "
                "so it cannot be read as plain text; accepted: read it with Config.require_secret or get_secret "
                "(the review treats it as a secret not known during preview)")
        return original_get(self, key, *args, **kwargs)

    def as_secret(original: Any) -> Any:
        def read(self: pulumi.Config, key: str, *args: Any, **kwargs: Any) -> Any:
            full = self.full_key(key)
            if full not in secure:
                return original(self, key, *args, **kwargs)
            if full not in _read:
                _read.append(full)
            return _unknown_secret()

        return read

    from gpulease.review.static_rule import trust, untrust

    _read.clear()
    stand_ins = {name: trust(as_secret(original), original) for name, original in originals.items()}
    for name, stand_in in stand_ins.items():  # the static rule allows them as it allows the getters they stand for
        setattr(config, name, stand_in)
    config._get = trust(plain_get, original_get)
    try:
        yield
    finally:
        for name, original in originals.items():
            setattr(config, name, original)
        config._get = original_get
        for stand_in in (*stand_ins.values(), plain_get):
            untrust(stand_in)
