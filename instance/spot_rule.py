"""Is the cloud taking this instance back? The spot notice rule, alone (standard library only).

AWS: IMDSv2 ``spot/instance-action`` (an interruption: its ``time``) and ``events/recommendations/rebalance``;
Alibaba Cloud: ``instance/spot/termination-time``. A notice whose time cannot be read leaves the documented
minimum window: two minutes on AWS, five on Alibaba Cloud (``bounds``). ``read_notice`` takes the metadata reader
and the wall time, and answers ``(kind, what was seen, end of the window)`` or None."""

from __future__ import annotations

import json
from collections.abc import Callable

try:
    from instance import bounds
    from instance import cloud_access as ca
except ImportError:  # on the instance: the other tools are installed next to this file
    import bounds  # type: ignore[no-redef]
    import cloud_access as ca  # type: ignore[no-redef]

NOTICE_WINDOW_SECONDS = {"aws": bounds.value("notice_minimum_aws"), "alicloud": bounds.value("notice_minimum_alicloud")}


def _time_or(text: str, default: float) -> float:
    try:
        return ca.parse_time(text)
    except ValueError:
        return default


def read_notice(cloud: str, get: Callable[[str], tuple[int, str]], now: float) -> tuple[str, str, float | None] | None:
    """('interruption' | 'rebalance', what was seen, end of the notice window) or None; ``get`` raises
    ``MetadataError`` when the service does not answer."""
    default_end = now + NOTICE_WINDOW_SECONDS.get(cloud, 120)
    if cloud == "alicloud":
        status, body = get("/latest/meta-data/instance/spot/termination-time")
        if status == 200 and body.strip():
            return "interruption", f"spot instance to be released at {body.strip()}", _time_or(body, default_end)
        return None
    status, body = get("/latest/meta-data/spot/instance-action")
    if status == 200 and body.strip():
        try:
            notice = json.loads(body)
        except json.JSONDecodeError:
            notice = {}
        notice = notice if isinstance(notice, dict) else {}
        when = str(notice.get("time", ""))
        return "interruption", f"spot instance-action {notice.get('action', body.strip())} at {when or 'unknown'}", \
            _time_or(when, default_end)
    status, body = get("/latest/meta-data/events/recommendations/rebalance")
    if status == 200 and body.strip():
        try:
            when = str(json.loads(body).get("noticeTime", ""))
        except (json.JSONDecodeError, AttributeError):
            when = body.strip()
        return "rebalance", f"rebalance recommendation noticed at {when or 'unknown'}", None
    return None
