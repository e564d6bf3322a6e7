"""OpenSSH public keys as the clouds' key-pair import accepts them: parsed, not pattern-matched.

The key line is ``<type> <base64 blob> [comment]``; the blob is decoded and parsed by ``cryptography``'s
``load_ssh_public_key`` (which checks that the blob's own type matches, the lengths add up and an EC point lies
on its curve), so ``ssh-rsa A`` or a truncated paste is refused here rather than by the cloud halfway through
``pulumi up``.

Which types each cloud imports:
- AWS ``ImportKeyPair``: "Imports the public key from an RSA or ED25519 key pair" (EC2 API reference,
  https://docs.aws.amazon.com/AWSEC2/latest/APIReference/API_ImportKeyPair.html; the same text is in botocore's
  ec2 service model, ``ImportKeyPair`` documentation). ECDSA is not listed.
- Alibaba Cloud ECS ``ImportKeyPair``: "The imported key pair must support one of the following encryption
  methods: rsa, dsa, ssh-rsa, ssh-dss, ecdsa" (https://www.alibabacloud.com/help/en/ecs/developer-reference/
  api-ecs-2014-05-26-importkeypair). ED25519 is not listed. DSA keys are refused here anyway: OpenSSH disabled
  them by default in 7.0 as too weak.
RSA keys shorter than 2048 bits are refused on both clouds as too weak (NIST SP 800-131A).
"""

from __future__ import annotations

from cryptography.exceptions import UnsupportedAlgorithm
from cryptography.hazmat.primitives.asymmetric import ec, ed25519, rsa
from cryptography.hazmat.primitives.serialization import load_ssh_public_key

MIN_RSA_BITS = 2048
KEY_TYPES: dict[str, tuple[str, ...]] = {
    "aws": ("ssh-rsa", "ssh-ed25519"),
    "alicloud": ("ssh-rsa", "ecdsa-sha2-nistp256", "ecdsa-sha2-nistp384", "ecdsa-sha2-nistp521"),
}
EXAMPLE = {
    "aws": "ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAA... you@host",
    "alicloud": "ecdsa-sha2-nistp256 AAAAE2VjZHNhLXNoYTItbmlzdHAyNTYAAAA... you@host (or ssh-rsa ...)",
}


class PublicKeyError(ValueError):
    pass


def key_type(line: str) -> str:
    """The key type of a public key line, after checking that its blob is a well-formed key of that type.

    Raises ``PublicKeyError`` saying what is wrong."""
    parts = line.strip().split(None, 2)
    if len(parts) < 2:
        raise PublicKeyError("is not an OpenSSH public key line '<type> <base64 key> [comment]'")
    declared = parts[0]
    known = sorted({t for types in KEY_TYPES.values() for t in types})
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


def cloud_problem(cloud: str, declared: str) -> str | None:
    """Why ``cloud``'s key-pair import would refuse a key of type ``declared``, or None."""
    accepted = KEY_TYPES[cloud]
    if declared in accepted:
        return None
    return (f"{declared} keys are refused by {'AWS' if cloud == 'aws' else 'Alibaba Cloud'}'s ImportKeyPair; "
            f"accepted on {cloud}: {', '.join(accepted)}, e.g. '{EXAMPLE[cloud]}'")
