"""OpenSSH public keys as the clouds' key-pair import accepts them: parsed, not pattern-matched.

The key line is ``<type> <base64 blob> [comment]``; the blob is decoded and parsed by ``cryptography``'s
``load_ssh_public_key`` (which checks that the blob's own type matches, the lengths add up and an EC point lies
on its curve), so ``ssh-rsa A`` or a truncated paste is refused here rather than by the cloud halfway through
``pulumi up``.

Which types each cloud imports is the cloud's to say (``key_types`` in ``components/<cloud>/spec.py``, with the
sources). RSA keys shorter than 2048 bits are refused on every cloud as too weak (NIST SP 800-131A).
"""

from __future__ import annotations

from collections.abc import Iterable

from cryptography.exceptions import UnsupportedAlgorithm
from cryptography.hazmat.primitives.asymmetric import ec, ed25519, rsa
from cryptography.hazmat.primitives.serialization import load_ssh_public_key

from gpulease.core.schema_pattern import PY_SPACE, literal

MIN_RSA_BITS = 2048


class PublicKeyError(ValueError):
    pass


def key_type(line: str, known_types: Iterable[str]) -> str:
    """The key type of a public key line, after checking that it is one of ``known_types`` (those some cloud
    imports: each cloud's ``spec.py`` lists its own) and that its blob is a well-formed key of that type.

    Raises ``PublicKeyError`` saying what is wrong."""
    parts = line.strip().split(None, 2)
    if len(parts) < 2:
        raise PublicKeyError("is not an OpenSSH public key line '<type> <base64 key> [comment]'")
    declared = parts[0]
    known = sorted(set(known_types))
    if declared not in known:
        raise PublicKeyError(f"key type {declared!r} is not one the clouds import; known: {', '.join(known)}")
    try:
        key = load_ssh_public_key(f"{parts[0]} {parts[1]}".encode("ascii"))
    except (ValueError, UnsupportedAlgorithm, UnicodeEncodeError):
        raise PublicKeyError(f"the base64 part is not a valid {declared} key (truncated or mistyped?)") from None
    if isinstance(key, rsa.RSAPublicKey) and key.key_size < MIN_RSA_BITS:
        raise PublicKeyError(f"is a {key.key_size}-bit RSA key; accepted: RSA keys of at least {MIN_RSA_BITS} bits")
    if not isinstance(key, rsa.RSAPublicKey | ed25519.Ed25519PublicKey | ec.EllipticCurvePublicKey):
        raise PublicKeyError(f"key type {declared!r} is not one the clouds import")
    return declared


def line_pattern(known_types: Iterable[str]) -> str:
    """JSON Schema pattern of a key line's shape, ``<type> <base64 key> [comment]`` on one line (around it, space
    the loader strips); whether the key parses is ``key_type``'s alone."""
    types = "|".join(literal(t) for t in sorted(set(known_types)))
    space = f"[{PY_SPACE}]*"  # what str.strip() removes: Python's \s and ECMA-262's differ
    return rf"^{space}(?:{types})[ \t]+[A-Za-z0-9+/]+={{0,3}}(?:[ \t][^\r\n]*)?{space}(?![\s\S])"
