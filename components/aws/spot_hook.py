"""The spot instance's ``before_delete`` hook: cancel its spot request before the engine deletes the instance.

"If you terminate a running or stopped Spot Instance that was launched by a persistent Spot request, the Spot request
transitions to the open state so that a new Spot Instance can be launched"
(https://docs.aws.amazon.com/AWSEC2/latest/UserGuide/using-spot-instances-request.html#terminating-a-spot-instance).
The provider's own cancel on delete is not relied on (docs/provider-facts.md, hashicorp/terraform-provider-aws#38142
and #41206), and ``gpulease down``'s cancel by tag covers ``gpulease down`` only. This hook covers every delete the
engine makes of the instance: ``pulumi destroy``, a replacement (a pinned ``image.id``, ``spot.recover`` turned on
or off), the instance leaving the program (``phase: parked``).

The engine runs a named ``before_delete`` hook registered by the program ("Delete hooks are called before or after a
resource is deleted. This may occur during the deletion of a resource due to a destroy or that resource's removal
from the program, or as part of a resource replacement", https://www.pulumi.com/docs/iac/concepts/options/hooks/);
an error from a ``before_*`` hook fails the action (``pulumi.ResourceHookBinding`` docstring, SDK 3.272). A destroy
runs the hook only with the program: "When running ``pulumi destroy``, ``before_delete`` and ``after_delete`` resource
hooks require the operation to run with ``--run-program``" (the same docstring), and since engine 3.182 a destroy
without it is refused when a resource has a delete hook ("Prevent destroy without running the program if any
resource have delete hooks", pulumi/pulumi#19933, CHANGELOG 3.182.0). ``gpulease down`` destroys with the program
(the Automation API's ``destroy(run_program=True)``).

The call: EC2 ``CancelSpotInstanceRequests`` with the instance's ``spotInstanceRequestId`` (its state output), with
the credentials the program runs with (boto3's default chain, as the AWS provider reads them), retried by botocore
(standard mode, ``MAX_ATTEMPTS`` retries) with connect and read timeouts. A request EC2 no longer knows
(``InvalidSpotInstanceRequestID.NotFound``) or one already ended (``cancelled``, ``closed``, ``completed`` in the
answer) lets the delete go on; any other failure raises, and the engine then does not delete the instance (the
request stays tied to a running or stopped instance, never open to launch a new one)."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

import pulumi

MAX_ATTEMPTS = 5
"""botocore's retries of the one cancel (``max_attempts``: retries after the first call, six calls at most; standard
mode retries throttling, 5xx and connection errors)."""
CONNECT_TIMEOUT_SECONDS = 5
READ_TIMEOUT_SECONDS = 20
GONE_CODES = frozenset({"InvalidSpotInstanceRequestID.NotFound"})
"""The error codes that mean there is no request to cancel any more (EC2 API error codes,
https://docs.aws.amazon.com/AWSEC2/latest/APIReference/errors-overview.html)."""
ENDED_STATES = frozenset({"cancelled", "closed", "completed"})
"""A request in one of these states launches nothing (CancelledSpotInstanceRequest ``State``,
https://docs.aws.amazon.com/AWSEC2/latest/APIReference/API_CancelledSpotInstanceRequest.html)."""
REQUEST_ID_OUTPUT = "spotInstanceRequestId"
"""The instance's state output naming its spot request (``aws:ec2/instance:Instance``, ``spot_instance_request_id``)."""


class SpotCancelRefusedError(RuntimeError):
    """The request could not be cancelled: the engine keeps the instance (and the request tied to it)."""


def ec2_client(region: str) -> Any:
    """EC2 in ``region`` with the program's credentials, bounded: timeouts per call and botocore's retries."""
    import boto3
    from botocore.config import Config

    config = Config(connect_timeout=CONNECT_TIMEOUT_SECONDS, read_timeout=READ_TIMEOUT_SECONDS,
                    retries={"mode": "standard", "max_attempts": MAX_ATTEMPTS})
    return boto3.client("ec2", region_name=region, config=config)


CLIENT: Callable[[str], Any] = ec2_client
"""The seam the tests point at moto's server."""


def request_id(outputs: Mapping[str, Any] | None) -> str | None:
    """The spot request id of an instance's state outputs, or None (an on-demand instance, or none recorded)."""
    found = (outputs or {}).get(REQUEST_ID_OUTPUT)
    return found if isinstance(found, str) and found else None


def cancel_request(ec2: Any, rid: str, name: str) -> str:
    """Cancel ``rid``; what happened in one line. Raises ``SpotCancelRefusedError`` unless the request is ended or gone."""
    from botocore.exceptions import BotoCoreError, ClientError

    try:
        answer = ec2.cancel_spot_instance_requests(SpotInstanceRequestIds=[rid])
    except ClientError as exc:
        code = str(exc.response.get("Error", {}).get("Code", ""))
        if code in GONE_CODES:
            return f"{name}: spot request {rid} is gone already ({code})"
        raise SpotCancelRefusedError(f"{name}: cancelling spot request {rid} failed ({code or 'no error code'}: "
                                f"{' '.join(str(exc).split())[:300]}); the instance is not deleted, so the request "
                                "cannot re-open and launch another. Fix the cause and run the operation again") from None
    except BotoCoreError as exc:
        raise SpotCancelRefusedError(f"{name}: cancelling spot request {rid} failed ({type(exc).__name__}: "
                                f"{' '.join(str(exc).split())[:300]}); the instance is not deleted, so the request "
                                "cannot re-open and launch another. Run the operation again") from None
    states = {str(item.get("State")) for item in answer.get("CancelledSpotInstanceRequests") or []
              if item.get("SpotInstanceRequestId") == rid}
    if not states or not states <= ENDED_STATES:
        raise SpotCancelRefusedError(f"{name}: EC2 answered the cancel of spot request {rid} with state "
                                f"{', '.join(sorted(states)) or 'none'} (accepted: {', '.join(sorted(ENDED_STATES))}); "
                                "the instance is not deleted. Run the operation again")
    return f"{name}: spot request {rid} {', '.join(sorted(states))}"


def hook_name(name: str) -> str:
    """The hook's name, unique in the program (the engine finds a delete hook by name)."""
    return f"{name}-cancel-spot-request"


def cancel_before_delete(name: str, region: str) -> pulumi.ResourceHook:
    """The named ``before_delete`` hook of experiment ``name``'s spot instance."""

    def cancel(args: pulumi.ResourceHookArgs) -> None:
        rid = request_id(args.old_outputs)
        if rid is None:
            return
        pulumi.log.info(cancel_request(CLIENT(region), rid, name))

    return pulumi.ResourceHook(hook_name(name), cancel)


def spot_hooks(name: str, region: str) -> pulumi.ResourceHookBinding:
    """The spot instance's hooks: the cancel before it is deleted."""
    return pulumi.ResourceHookBinding(before_delete=[cancel_before_delete(name, region)])
