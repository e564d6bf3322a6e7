"""The stack's persistent spot requests on AWS, found and cancelled by their tags (``gpulease:managed-by``,
``gpulease:stack`` and ``gpulease:experiment``, which the stack gives each persistent request it makes and keeps on
it after a delete: ``components/aws/lifetime.py``): ``gpulease down`` cancels them before the destroy and checks
none is open after it; ``gpulease up`` does the same for the experiments it parks (``phase: parked`` removes their
instance), and only theirs: a sweep's other runs keep training.

Every call uses the credentials of the stack's AWS provider (``components.aws_credentials``): boto3's default chain
may be another account, where nothing of the stack's is found and a check would pass."""

from __future__ import annotations

from collections.abc import Callable, Collection
from typing import Any

from components.aws_credentials import ProviderCredentials, bounded_config, session
from gpulease.core import vocabulary as v

LIVE_REQUEST_STATES = ("open", "active", "disabled")
"""Spot request states that can still launch an instance (DescribeSpotInstanceRequests ``State``)."""
MAX_INSTANCE_IDS = 200
"""Instances asked about in one DescribeInstances call (the fallback for a request without its experiment tag)."""


def owned(tags: dict[str, str], stack: str) -> bool:
    return tags.get(v.TAG_MANAGED_BY) == v.MANAGED_BY_VALUE and tags.get(v.TAG_STACK) == stack


def _tags(raw: dict[str, Any]) -> dict[str, str]:
    return {t["Key"]: t["Value"] for t in raw.get("Tags") or []}


def _instance_experiments(ec2: Any, instance_ids: list[str]) -> dict[str, str | None]:
    """The ``gpulease:experiment`` tag of each instance (None: untagged or gone)."""
    found: dict[str, str | None] = dict.fromkeys(instance_ids)
    for start in range(0, len(instance_ids), MAX_INSTANCE_IDS):
        chunk = instance_ids[start:start + MAX_INSTANCE_IDS]
        try:
            pages = ec2.get_paginator("describe_instances").paginate(
                Filters=[{"Name": "instance-id", "Values": chunk}])
            for page in pages:
                for reservation in page.get("Reservations", []):
                    for inst in reservation.get("Instances", []):
                        found[inst["InstanceId"]] = _tags(inst).get(v.TAG_EXPERIMENT)
        except Exception:  # unknown: the request counts as the parked runs' (fail closed)
            continue
    return found


def aws_live_requests(ec2: Any, stack: str) -> list[dict[str, Any]]:
    """The live spot requests tagged as this stack's (``gpulease:managed-by`` and ``gpulease:stack``), as EC2
    describes them."""
    filters = [{"Name": f"tag:{v.TAG_MANAGED_BY}", "Values": [v.MANAGED_BY_VALUE]},
               {"Name": f"tag:{v.TAG_STACK}", "Values": [stack]},
               {"Name": "state", "Values": list(LIVE_REQUEST_STATES)}]
    found: dict[str, dict[str, Any]] = {}
    for page in ec2.get_paginator("describe_spot_instance_requests").paginate(Filters=filters):
        for raw in page.get("SpotInstanceRequests", []):
            if raw.get("State") in LIVE_REQUEST_STATES and owned(_tags(raw), stack):
                found[raw["SpotInstanceRequestId"]] = raw
    return [found[k] for k in sorted(found)]


def of_experiments(ec2: Any, requests: list[dict[str, Any]], experiments: Collection[str]) -> list[dict[str, Any]]:
    """The requests of ``experiments``: by the request's own ``gpulease:experiment`` tag, else (a request made
    before it carried one) by its instance's. A request whose experiment cannot be told is counted in (cancelling
    one more request stops no instance; leaving one open could launch one)."""
    untagged = [r for r in requests if not _tags(r).get(v.TAG_EXPERIMENT)]
    by_instance = _instance_experiments(ec2, sorted({str(r["InstanceId"]) for r in untagged if r.get("InstanceId")}))
    out = []
    for raw in requests:
        name = _tags(raw).get(v.TAG_EXPERIMENT) or by_instance.get(str(raw.get("InstanceId") or ""))
        if name is None or name in experiments:
            out.append(raw)
    return out


def aws_open_spot_requests(ec2: Any, stack: str, experiments: Collection[str] | None = None) -> list[str]:
    """The ids of the stack's live spot requests (of ``experiments`` only, when given)."""
    found = aws_live_requests(ec2, stack)
    if experiments is not None:
        found = of_experiments(ec2, found, experiments)
    return [r["SpotInstanceRequestId"] for r in found]


def aws_cancel_spot_requests(ec2: Any, stack: str, experiments: Collection[str] | None = None) -> list[str]:
    """Cancel the stack's live spot requests (of ``experiments`` only, when given; besides the instance's own
    ``before_delete`` hook and the provider's cancel on delete, not verified here: docs/provider-facts.md), so that
    no persistent request relaunches what the destroy or the parking terminates."""
    ids = aws_open_spot_requests(ec2, stack, experiments)
    if ids:
        ec2.cancel_spot_instance_requests(SpotInstanceRequestIds=ids)
    return ids


def ec2_client(region: str, creds: ProviderCredentials) -> Any:
    """EC2 in ``region`` with the stack's provider credentials, bounded (timeouts, botocore's retries)."""
    return session(creds, region).client("ec2", region_name=region, config=bounded_config())


CLIENT: Callable[[str, ProviderCredentials], Any] = ec2_client
"""The seam a test points at moto's server."""


class SpotRequestError(RuntimeError):
    """The stack's spot requests could not be cancelled, or one is still open: one line, what to run."""


def parked_spot_experiments(cloud: str, experiments: list[Any]) -> list[str]:
    """The spot experiments an update parks on AWS (``phase: parked`` removes their instance)."""
    if cloud != "aws":
        return []
    return sorted(e.name for e in experiments if e.phase == "parked" and e.market == "spot")


def parks_spot_on_aws(cloud: str, experiments: list[Any]) -> bool:
    """Whether an update parks a spot experiment on AWS."""
    return bool(parked_spot_experiments(cloud, experiments))


def cancel_before_parking(stack: str, region: str, creds: ProviderCredentials, experiments: Collection[str]) -> list[str]:
    """Cancel the parked experiments' live spot requests before the update removes their instance: the removal
    terminates it, which re-opens a persistent request that is not cancelled first (docs/clouds.md#spot-recovery).
    The other experiments' requests are theirs: cancelling one would end that run's recovery."""
    try:
        return aws_cancel_spot_requests(CLIENT(region, creds), stack, experiments)
    except Exception as exc:
        raise SpotRequestError(f"stack {stack!r}: cancelling its spot requests before parking failed "
                               f"({type(exc).__name__}: {' '.join(str(exc).split())[:300]}); nothing was deployed "
                               "(gpulease up again)") from None


def check_none_open(stack: str, region: str, after: str, creds: ProviderCredentials,
                    experiments: Collection[str] | None = None) -> None:
    """Fail with the command to run when a request of the stack (of ``experiments``, when given) is still live
    ``after`` an operation."""
    still = aws_open_spot_requests(CLIENT(region, creds), stack, experiments)
    if still:
        raise SpotRequestError(f"stack {stack!r}: {after}, but its spot request(s) {', '.join(still)} are still open "
                               "and may launch an instance; cancel them: aws ec2 cancel-spot-instance-requests "
                               f"--region {region} --spot-instance-request-ids {' '.join(still)}")


def end_strays(ec2: Any, requests: list[dict[str, Any]], tracked: Collection[str]) -> list[str]:
    """Terminate the instances the stack's (now cancelled) requests launched that the stack does not track: a
    persistent request whose instance was terminated outside the kit re-opens and launches one the stack never
    tagged; cancelling the request leaves it running ("Canceling a Spot Instance request does not terminate the
    instance", CancelSpotInstanceRequests, https://docs.aws.amazon.com/AWSEC2/latest/APIReference/API_CancelSpotInstanceRequests.html).
    One TerminateInstances call per instance (one wrong id fails the whole call), at most ``MAX_INSTANCE_IDS``."""
    strays = sorted({str(r["InstanceId"]) for r in requests if r.get("InstanceId")} - set(tracked))
    if len(strays) > MAX_INSTANCE_IDS:
        raise SpotRequestError(f"the stack's spot requests name {len(strays)} instances it does not track (at most "
                               f"{MAX_INSTANCE_IDS} are ended at once); terminate them: aws ec2 terminate-instances "
                               f"--instance-ids {' '.join(strays[:MAX_INSTANCE_IDS])} ...")
    for instance in strays:
        ec2.terminate_instances(InstanceIds=[instance])
    return strays


def cancel_with_strays(ec2: Any, stack: str, tracked: Collection[str]) -> tuple[list[str], list[str]]:
    """Cancel the stack's live requests, then end the instances they launched that the stack does not track:
    the ids cancelled and the instances terminated."""
    requests = aws_live_requests(ec2, stack)
    ids = [r["SpotInstanceRequestId"] for r in requests]
    if ids:
        ec2.cancel_spot_instance_requests(SpotInstanceRequestIds=ids)
    return ids, end_strays(ec2, requests, tracked)
