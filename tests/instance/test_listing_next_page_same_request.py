"""A hub listing whose ``Link: rel="next"`` names the page already read fails the source at once (docs/workflow.md:
"a listing whose Link: rel=\"next\" points at a page already read ... fails the source"), also when the link spells
that page another way: a fragment (``#2``) is never sent to the server, and a scheme or host in capitals is the same
origin (RFC 3986 §6.2.2.1), so the same request would be sent again, up to the 10,000-page cap."""

from __future__ import annotations

import urllib.parse
from typing import Any

import pytest

from instance import staging_hubs
from instance.staging_files import StagingError

FIRST = "https://huggingface.co/api/models/org/m/tree/main?recursive=true"


class Page:
    def __init__(self, link: str) -> None:
        self.link = link

    def getheader(self, name: str, default: Any = None) -> Any:
        return self.link if name == "Link" else default


def _request(url: str) -> tuple[str, str, str]:
    """What goes on the wire: the origin (case-insensitive) and the path with its query, never the fragment."""
    parts = urllib.parse.urlsplit(url)
    return parts.scheme.lower(), (parts.hostname or "").lower(), f"{parts.path}?{parts.query}"


@pytest.mark.parametrize("spelling", [
    lambda n: f"{FIRST}#{n}",
    lambda n: FIRST.replace("huggingface.co", "HuggingFace.co" if n % 2 else "HUGGINGFACE.CO"),
    lambda n: FIRST.replace("huggingface.co", "huggingface.co:443"),
    lambda n: FIRST.replace("https:", "HTTPS:"),
], ids=["fragment", "host-case", "default-port", "scheme-case"])
def test_a_next_link_back_to_the_page_already_read_fails_before_it_is_asked_again(spelling) -> None:
    asked: list[str] = []

    def get_json(url: str) -> tuple[Any, Page]:
        asked.append(url)
        n = len(asked)
        return [{"type": "file", "path": f"f{n}.bin", "size": 1, "oid": "0" * 40}], Page(f'<{spelling(n)}>; rel="next"')

    with pytest.raises(StagingError):
        staging_hubs.hf_files(get_json, "https://huggingface.co", "models", "org/m", "main", "hf://org/m")
    sent = [_request(u) for u in asked]
    assert len(sent) == len(set(sent)), (
        f"the same listing request was sent {len(sent) - len(set(sent)) + 1} times ({len(asked)} pages read)")


def test_the_same_path_with_another_query_or_port_is_another_page() -> None:
    """Only spellings of one request are one page: another query (the next cursor) or port is read."""
    pages = [f"{FIRST}&cursor=2", FIRST.replace("huggingface.co", "huggingface.co:8443"), None]
    asked: list[str] = []

    def get_json(url: str) -> tuple[Any, Page]:
        asked.append(url)
        link = pages[len(asked) - 1]
        return [], Page(f'<{link}>; rel="next"' if link else "")

    staging_hubs.hf_files(get_json, "https://huggingface.co", "models", "org/m", "main", "hf://org/m")
    assert len(asked) == 3, asked
