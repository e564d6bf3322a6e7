"""A hub listing's ``Link: rel="next"`` page is held to the rule a redirect is held to (``redirect_target``): only
http(s), never from https down to plain http. The listing carries the digests every file is verified against, so a
page read in the clear (or over another scheme) lets anyone on the path choose the files and their digests."""

from __future__ import annotations

from typing import Any

import pytest

from instance import staging_hubs
from instance.staging_files import StagingError

ENTRY = {"type": "file", "path": "a.bin", "size": 1, "oid": "0" * 40}


class Page:
    def __init__(self, link: str | None) -> None:
        self.link = link

    def getheader(self, name: str, default: Any = None) -> Any:
        return self.link if name == "Link" and self.link else default


@pytest.mark.parametrize("link", ["http://huggingface.co/api/models/org/m/tree/main?cursor=2",
                                  "ftp://huggingface.co/api/models/org/m/tree/main?cursor=2",
                                  "file:///etc/passwd"])
def test_a_next_page_link_off_https_is_refused_before_it_is_read(link: str) -> None:
    asked: list[str] = []

    def get_json(url: str) -> tuple[Any, Page]:
        asked.append(url)
        if len(asked) == 1:
            return [ENTRY], Page(f'<{link}>; rel="next"')
        return [{**ENTRY, "path": "b.bin"}], Page(None)

    with pytest.raises(StagingError):
        staging_hubs.hf_files(get_json, "https://huggingface.co", "models", "org/m", "main", "hf://org/m")
    assert asked == ["https://huggingface.co/api/models/org/m/tree/main?recursive=true"], asked
