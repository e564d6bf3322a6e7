"""The stack's persistent spot requests on AWS, found and cancelled by their tags (``gpulease:managed-by`` and
``gpulease:stack``, which the stack gives each persistent request it makes and keeps on it after a delete:
``components/aws/lifetime.py``): ``gpulease down`` cancels them before the destroy and checks none is open after
it; ``gpulease up`` does the same when it parks an experiment (``phase: parked`` removes the instance)."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from gpulease.core import vocabulary as v

LIVE_REQUEST_STATES = ("open", "active", "disabled")
"""Spot request states that can still launch an instance (DescribeSpotInstanceRequests ``State``)."""


def owned(tags: dict[str, str], stack: str) -> bool:
    return tags.get(v.TAG_MANAGED_BY) == v.MANAGED_BY_VALUE and tags.get(v.TAG_STACK) == stack


LIVE_REQUEST_STATES = ("open", "active", "disabled")
"""Spot request states that can still launch an instance (DescribeSpotInstanceRequests ``State``)."""


def aws_open_spot_requests(ec2: Any, stack: str) -> list[str]:
    """The live spot requests tagged as this stack's (``gpulease:managed-by`` and ``gpulease:stack``, which the
    stack gives each persistent request it makes and keeps on it after a destroy: ``retain_on_delete``)."""
    filters = [{"Name": f"tag:{v.TAG_MANAGED_BY}", "Values": [v.MANAGED_BY_VALUE]},
               {"Name": f"tag:{v.TAG_STACK}", "Values": [stack]},
               {"Name": "state", "Values": list(LIVE_REQUEST_STATES)}]
    found: list[str] = []
    for page in ec2.get_paginator("describe_spot_instance_requests").paginate(Filters=filters):
        for raw in page.get("SpotInstanceRequests", []):
            tags = {t["Key"]: t["Value"] for t in raw.get("Tags") or []}
            if raw.get("State") in LIVE_REQUEST_STATES and owned(tags, stack):
                found.append(raw["SpotInstanceRequestId"])
    return sorted(set(found))


def aws_cancel_spot_requests(ec2: Any, stack: str) -> list[str]:
    """Cancel the stack's live spot requests (besides the instance's own ``before_delete`` hook and the provider's
    cancel on delete, not verified here: docs/provider-facts.md), so that no persistent request relaunches what the
    destroy terminates."""
    ids = aws_open_spot_requests(ec2, stack)
    if ids:
        ec2.cancel_spot_instance_requests(SpotInstanceRequestIds=ids)
    return ids


def ec2_client(region: str) -> Any:
    import boto3
    from botocore.config import Config

    config = Config(connect_timeout=5, read_timeout=30, retries={"mode": "standard", "max_attempts": 4})
    return boto3.client("ec2", region_name=region, config=config)


CLIENT: Callable[[str], Any] = ec2_client
"""The seam a test points at moto's server."""


class SpotRequestError(RuntimeError):
    """The stack's spot requests could not be cancelled, or one is still open: one line, what to run."""


def parks_spot_on_aws(cloud: str, experiments: list[Any]) -> bool:
    """Whether an update parks a spot experiment on AWS (``phase: parked`` removes its instance)."""
    return cloud == "aws" and any(e.phase == "parked" and e.market == "spot" for e in experiments)


def cancel_before_parking(stack: str, region: str) -> list[str]:
    """Cancel the stack's live spot requests before the update removes the instance: the removal terminates it,
    which re-opens a persistent request that is not cancelled first (docs/clouds.md#spot-recovery)."""
    try:
        return aws_cancel_spot_requests(CLIENT(region), stack)
    except Exception as exc:
        raise SpotRequestError(f"stack {stack!r}: cancelling its spot requests before parking failed "
                               f"({type(exc).__name__}: {' '.join(str(exc).split())[:300]}); nothing was deployed "
                               "(gpulease up again)") from None


def check_none_open(stack: str, region: str, after: str) -> None:
    """Fail with the command to run when a request of the stack is still live ``after`` an operation."""
    still = aws_open_spot_requests(CLIENT(region), stack)
    if still:
        raise SpotRequestError(f"stack {stack!r}: {after}, but its spot request(s) {', '.join(still)} are still open "
                               "and may launch an instance; cancel them: aws ec2 cancel-spot-instance-requests "
                               f"--region {region} --spot-instance-request-ids {' '.join(still)}")
