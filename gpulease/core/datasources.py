"""Data sources a stack stages on its instance: what a source URI may be, and what in one looks like a credential.

Shared by the spec (which refuses a bad source before anything is registered) and the policy pack (which checks
the same on whatever program registered the instance). The instance side (``instance/staging.py``) reads the same
URIs with its own standard-library parser.

Accepted URIs:

- ``s3://bucket/key-or-prefix`` and ``oss://bucket/key-or-prefix``: a bucket, read through the cloud's endpoint in
  the stack's region with the instance role's credentials (a prefix ending in ``/`` is a folder);
- ``hf://org/repo`` (a model) or ``hf://datasets/org/repo`` (a dataset), at ``revision`` (default ``main``);
- ``modelscope://org/repo`` at ``revision`` (default ``master``);
- ``https://host/path``: one file.
"""

from __future__ import annotations

import re
import urllib.parse
from dataclasses import dataclass

from gpulease.core.printable import hidden, printable

SCHEMES = ("s3", "oss", "hf", "modelscope", "https")
BUCKET_SCHEMES = ("s3", "oss")
HUB_SCHEMES = ("hf", "modelscope")
DEFAULT_REVISIONS = {"hf": "main", "modelscope": "master"}
BUCKET_SCHEME_OF_CLOUD = {"aws": "s3", "alicloud": "oss"}
# The names staging gives its own files in a source's folder (the instance's staging.STATE_NAME and SKIPPED_NAMES,
# kept equal by a test): a source file named so would be overwritten by the skip record, or skipped as a resume file.
STAGING_STATE_NAME = ".gpulease-source.json"
STAGING_RESERVED_SUFFIXES = (".part", ".part.json", ".tmp")
NAME_MAX = 255
"""The longest name of one path component on Linux file systems (ext4, xfs: NAME_MAX in <linux/limits.h>)."""
PATH_MAX = 4096
"""The longest path the kernel opens (PATH_MAX in <linux/limits.h>)."""
LONGEST_SUFFIX = ".part.json"
"""The longest name staging writes beside a file (``instance/staging_files.py`` LONGEST_SUFFIX)."""

_BUCKET = re.compile(r"^[a-z0-9][a-z0-9.-]{1,61}[a-z0-9]\Z")
_HUB_PART = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._-]{0,95}\Z")
KEY_MAX_BYTES = {"s3": 1024, "oss": 1023}
"""The longest object key each cloud stores, in bytes of UTF-8 (S3: "Naming Amazon S3 objects"; OSS: "Object naming
conventions", 1 to 1,023 bytes; docs/workflow.md)."""
_KEY = re.compile(r"^[A-Za-z0-9!_.'()/+=@,:~-]*\Z")  # no *: the role's read grant on key* would take it as a wildcard

# What a credential looks like when pasted into a URL: user:password@, a signed URL's query (AWS SigV4/V2, OSS,
# Azure SAS), a token-like query parameter, or a known key/token format (AWS access key ids, Alibaba Cloud
# AccessKey ids, Hugging Face and GitHub tokens).
_CREDENTIAL_QUERY = re.compile(
    r"(?i)(^|[?&;])(x-amz-signature|x-amz-credential|x-amz-security-token|awsaccesskeyid|signature|ossaccesskeyid|"
    r"x-oss-signature|x-oss-credential|security-token|sig|sv|token|access_token|api_key|apikey|key|password|secret|"
    r"auth|authorization|bearer|x-goog-signature|x-goog-credential|[a-z_-]*token)="
    r"|bearer[ +:%]"
)
_CREDENTIAL_TEXT = re.compile(
    r"(AKIA|ASIA)[0-9A-Z]{16}|LTAI[0-9A-Za-z]{12,30}|hf_[A-Za-z0-9]{30,}|gh[pousr]_[A-Za-z0-9]{30,}"
)


@dataclass(frozen=True)
class SourceUri:
    """A parsed source URI: ``scheme``, the bucket or host (``where``), the key, repository or path (``what``)."""

    scheme: str
    where: str
    what: str

    @property
    def is_bucket(self) -> bool:
        return self.scheme in BUCKET_SCHEMES

    @property
    def is_hub(self) -> bool:
        return self.scheme in HUB_SCHEMES

    @property
    def is_object(self) -> bool:
        """A bucket key not ending in ``/``: one object, which staging copies alone (``aws s3 cp`` / ``ossutil cp``
        without ``-r``, ``instance/staging.py``), reading that key and no other."""
        return self.is_bucket and bool(self.what) and not self.what.endswith("/")


def credential_problem(uri: str) -> str | None:
    """Why ``uri`` looks like it carries a credential (which would end up in user-data, state and logs), or None."""
    try:
        parts = urllib.parse.urlsplit(uri)
    except ValueError:  # malformed: parse_source says why
        return None
    if parts.username or parts.password or "@" in parts.netloc:
        return "it carries a user name or password (user:password@)"
    if parts.query and _CREDENTIAL_QUERY.search(parts.query):
        return "its query looks like a signature or a token (a pre-signed or tokenised URL)"
    if parts.fragment and _CREDENTIAL_QUERY.search(parts.fragment):
        return "its fragment (#...) looks like a token"
    if _CREDENTIAL_TEXT.search(uri):
        return "it contains what looks like an access key or a hub token"
    return None


ENCODED_SEPARATOR = re.compile(r"%(?:2[fF]|5[cC])")
FILE_NAME_MAX = NAME_MAX - len(LONGEST_SUFFIX)
"""The longest file name a source may give: NAME_MAX less the {suffix} staging writes beside the file."""


def source_path_problem(path: str, encoded: bool = True) -> str | None:
    """Why staging cannot write what a source's path names (None: it can), the same rule on both sides
    (``instance/staging_files.py`` holds the other copy; a test feeds both one table): an encoded separator (``%2F``,
    ``%5C``: one name to the server, a folder here), escapes that are not UTF-8 (``%FF``), a ``.`` or ``..`` part
    after decoding, a name over NAME_MAX bytes of UTF-8 (a file name over FILE_NAME_MAX), or more than PATH_MAX
    bytes in all. ``encoded``: a URI path (https), else a bucket key."""
    if encoded and ENCODED_SEPARATOR.search(path):
        return "the path holds an encoded separator (%2F or %5C); accepted: / between folders, never encoded"
    text = urllib.parse.unquote(path, errors="surrogateescape") if encoded else path
    if encoded and any("\udc80" <= c <= "\udcff" for c in text):  # %FF, a lone %C3: bytes of no text (else U+FFFD)
        return "the path's %XX escapes are not UTF-8 (as %FF); accepted: escapes that spell UTF-8 text (%C3%A9 for é)"
    parts = [p for p in text.split("/") if p]
    if any(p in (".", "..") for p in parts):
        return "the path holds a . or .. part (also written %2e); accepted: a path without them"
    size = len(text.encode("utf-8", "surrogatepass"))
    if size > PATH_MAX:
        return f"the path is {size} bytes; accepted: at most {PATH_MAX} bytes in UTF-8 (PATH_MAX)"
    for i, part in enumerate(parts):
        limit = FILE_NAME_MAX if i == len(parts) - 1 and not text.endswith("/") else NAME_MAX
        n = len(part.encode("utf-8", "surrogatepass"))
        if n > limit:
            return (f"a name of {n} bytes in UTF-8; accepted: a file name of at most {FILE_NAME_MAX} bytes (NAME_MAX "
                    f"{NAME_MAX} per path component, less the {LONGEST_SUFFIX} staging writes beside the file), a "
                    f"folder name of at most {NAME_MAX}")
    return None


def parse_source(uri: str) -> SourceUri:
    """The parsed URI, or ``ValueError`` saying what is accepted."""
    scheme, sep, rest = uri.partition("://")
    if not sep or scheme not in SCHEMES:
        raise ValueError(f"{uri!r}: unknown or missing scheme; accepted: {', '.join(s + '://' for s in SCHEMES)}")
    if any(c.isspace() or hidden(c) for c in uri) or "\\" in uri:  # the instance's rule (rel_parts), not isprintable
        raise ValueError(f"'{printable(uri)}': holds a space, a control character, an invisible or unassigned one or a "
                         "backslash; accepted: a URI of printable characters without spaces (percent-encode them)")
    if scheme in BUCKET_SCHEMES:
        bucket, _, key = rest.partition("/")
        if not _BUCKET.match(bucket) or ".." in bucket:
            raise ValueError(f"{uri!r}: {bucket!r} is not a bucket name; accepted: {scheme}://bucket/key-or-prefix/")
        if "*" in key:  # StringLike and the Resource ARN of the read grant (S3 and OSS) treat * as "any characters"
            raise ValueError(f"{uri!r}: the key {key!r} holds a *, which the instance role's read grant would take as "
                             "a wildcard (reading past the key); accepted: an object key or prefix without *")
        if not _KEY.match(key) or "//" in key or any(p in (".", "..") for p in key.split("/")):
            raise ValueError(f"{uri!r}: {key!r} is not an object key or prefix; accepted: letters, digits and "
                             "! _ . ' ( ) / + = @ , : ~ -, no // and no . or .. part")
        if scheme == "oss" and key.startswith("/"):  # Alibaba Cloud, "Object naming conventions"
            raise ValueError(f"{uri!r}: the OSS object name {key!r} starts with /, which no OSS object name does; "
                             f"accepted: oss://{bucket}/{key.lstrip('/')} (one / after the bucket)")
        most = KEY_MAX_BYTES[scheme] - (not key or key.endswith("/"))  # a prefix needs a byte for a name under it
        if (size := len(key.encode())) > most:
            raise ValueError(f"{uri!r}: the {'prefix' if most < KEY_MAX_BYTES[scheme] else 'key'} is {size} bytes "
                             f"of UTF-8; accepted: at most {most} ({scheme.upper()} keys are at most "
                             f"{KEY_MAX_BYTES[scheme]} bytes)")
        if (problem := source_path_problem(key, encoded=False)) is not None:
            raise ValueError(f"{uri!r}: {problem}")
        return SourceUri(scheme, bucket, key)
    if scheme in HUB_SCHEMES:
        parts = rest.strip("/").split("/")
        if scheme == "hf" and parts[:1] == ["datasets"]:
            kind, parts = "datasets/", parts[1:]
        else:
            kind = ""
        if len(parts) != 2 or not all(_HUB_PART.match(p) for p in parts) or any(p in (".", "..") for p in parts):
            raise ValueError(f"{uri!r}: is not a hub repository; accepted: {scheme}://org/repo"
                             + (" or hf://datasets/org/repo" if scheme == "hf" else ""))
        return SourceUri(scheme, kind.rstrip("/") or "models", "/".join(parts))
    return _https_source(uri, scheme)


_BAD_ESCAPE = re.compile(r"%(?![0-9A-Fa-f]{2})")
_HTTPS_ACCEPTED = "accepted: https://host[:port]/path/to/file (one file, port 1-65535, no fragment)"


def _https_source(uri: str, scheme: str) -> SourceUri:
    try:
        parts = urllib.parse.urlsplit(uri)
        port = parts.port
    except ValueError:  # "Invalid IPv6 URL", "Port could not be cast to integer value", "Port out of range"
        raise ValueError(f"{uri!r}: the host or port cannot be read; {_HTTPS_ACCEPTED}") from None
    if not parts.hostname or not parts.path or parts.path.endswith("/"):
        raise ValueError(f"{uri!r}: names no host or no file; {_HTTPS_ACCEPTED}")
    if port == 0:
        raise ValueError(f"{uri!r}: port 0 is not a port; {_HTTPS_ACCEPTED}")
    if parts.fragment or uri.endswith("#"):
        raise ValueError(f"{uri!r}: a fragment (#...) is never sent to the server; {_HTTPS_ACCEPTED}")
    if _BAD_ESCAPE.search(parts.path):
        raise ValueError(f"{uri!r}: the path holds a % that is not a %XX escape; accepted: a path with each % "
                         "followed by two hexadecimal digits (%25 for a % itself)")
    decoded = urllib.parse.unquote(parts.path)
    if any(hidden(c) for c in decoded) or "\\" in decoded:
        shown = next((printable(c) for c in decoded if hidden(c)), "\\")
        raise ValueError(f"{uri!r}: the path decodes to a control character, an invisible or unassigned one or a "
                         f"backslash ({shown}); accepted: a path of printable characters")
    if (problem := source_path_problem(parts.path)) is not None:
        raise ValueError(f"{uri!r}: {problem}")
    return SourceUri(scheme, parts.netloc, parts.path + (f"?{parts.query}" if parts.query else ""))


def file_name(source: SourceUri) -> str | None:
    """The file name a one-file source is saved under (``https`` and a bucket key not ending in ``/``)."""
    if source.scheme == "https":
        return urllib.parse.unquote(source.what.split("?", 1)[0].rsplit("/", 1)[-1]) or None
    if source.is_object:
        return source.what.rsplit("/", 1)[-1]
    return None


def staging_reserved(name: str) -> bool:
    """Whether ``name`` is one of the names staging gives its own files (its skip record, resume files)."""
    return name == STAGING_STATE_NAME or name.endswith(STAGING_RESERVED_SUFFIXES)
