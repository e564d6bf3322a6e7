"""The JSON Schema's shape of an SSH CIDR: what ``ipaddress.ip_network`` reads, written as a pattern."""

from __future__ import annotations

_OCTET = r"(25[0-5]|2[0-4][0-9]|1[0-9][0-9]|[1-9]?[0-9])"
_IPV4 = rf"({_OCTET}\.){{3}}{_OCTET}"
_H16 = "[0-9A-Fa-f]{1,4}"
_LS32 = f"({_H16}:{_H16}|{_IPV4})"


def _before(n: int) -> str:
    """Up to ``n`` + 1 groups before a ``::`` (RFC 3986's ``[ *n( h16 ":" ) h16 ]``), or none."""
    return f"(({_H16}:){{0,{n}}}{_H16})?" if n >= 0 else ""


_IPV6 = "(" + "|".join((
    f"({_H16}:){{6}}{_LS32}",
    f"::({_H16}:){{5}}{_LS32}",
    f"{_before(0)}::({_H16}:){{4}}{_LS32}",
    f"{_before(1)}::({_H16}:){{3}}{_LS32}",
    f"{_before(2)}::({_H16}:){{2}}{_LS32}",
    f"{_before(3)}::{_H16}:{_LS32}",
    f"{_before(4)}::{_LS32}",
    f"{_before(5)}::{_H16}",
    f"{_before(6)}::",
)) + ")"
"""An IPv6 address in the text forms RFC 4291 section 2.2 defines, as RFC 3986 section 3.2.2 writes them out
(``IPv6address``): eight groups of 1-4 hexadecimal digits, one ``::`` for a run of zero groups, the last two
groups optionally an IPv4 address; what ``ipaddress.ip_network`` reads (which also refuses octets with leading
zeros, as ``_OCTET`` does)."""
CIDR_PATTERN = (rf"^(?:{_IPV4}(/(3[0-2]|[12]?[0-9]))?|"
                rf"{_IPV6}(/(12[0-8]|1[01][0-9]|[1-9]?[0-9]))?)(?![\s\S])")
"""The shape of an IPv4 or IPv6 network (a bare address is its /32 or /128), for the JSON Schema: ended with
``(?![\\s\\S])``, as ``schema_pattern`` ends one (``$`` would match before a trailing newline)."""
