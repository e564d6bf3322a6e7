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

import re
from collections.abc import Callable, Mapping
from typing import Any

import pulumi

from components import aws_credentials
from components.aws_credentials import ProviderCredentials, provider_credentials

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


def program_credentials() -> ProviderCredentials:
    """The stack's AWS provider credentials, read from the program's config when the hook runs."""
    from pulumi.runtime import config as runtime_config

    merged = {**runtime_config.get_config_env(), **runtime_config.CONFIG.get()}
    return provider_credentials(merged, f"stacks/Pulumi.{pulumi.get_stack()}.yaml")


def provider_session(region: str) -> Any:
    """A session in ``region`` with the credentials the stack's provider uses (``components.aws_credentials``)."""
    return aws_credentials.session(program_credentials(), region)


SESSION: Callable[[str], Any] = provider_session
"""The seam the tests point at moto's server (or a stub)."""


def ec2_client(session: Any, region: str) -> Any:
    """EC2 in ``region`` on ``session``, bounded: timeouts per call and botocore's retries."""
    from botocore.config import Config

    config = Config(connect_timeout=CONNECT_TIMEOUT_SECONDS, read_timeout=READ_TIMEOUT_SECONDS,
                    retries={"mode": "standard", "max_attempts": MAX_ATTEMPTS})
    return session.client("ec2", region_name=region, config=config)


def request_id(outputs: Mapping[str, Any] | None) -> str | None:
    """The spot request id of an instance's state outputs, or None (an on-demand instance, or none recorded)."""
    found = (outputs or {}).get(REQUEST_ID_OUTPUT)
    return found if isinstance(found, str) and found else None


ARN = re.compile(r"^arn:aws[a-z-]*:ec2:(?P<region>[a-z0-9-]+):(?P<account>[0-9]{12}):instance/")
ZONE = re.compile(r"^(?P<region>[a-z]{2}(?:-[a-z]+)+-[0-9]+)(?:-[a-z]+-[0-9]+)?[a-z]\Z")
"""An availability zone (``us-east-1a``, a local zone ``us-east-1-bos-1a``): its region is the part before."""


def where(outputs: Mapping[str, Any]) -> tuple[str | None, str | None]:
    """The instance's region and account from its state outputs: the ARN's, else the region of its zone."""
    arn = ARN.match(str(outputs.get("arn") or ""))
    if arn:
        return arn["region"], arn["account"]
    zone = ZONE.match(str(outputs.get("availabilityZone") or ""))
    return (zone["region"] if zone else None), None


def _refused(name: str, rid: str, why: str, then: str = "Fix the cause and run the operation again") -> SpotCancelRefusedError:
    return SpotCancelRefusedError(f"{name}: cancelling spot request {rid} failed ({why}); the instance is not "
                                  f"deleted, so the request cannot re-open and launch another. {then}")


def _flat(exc: BaseException) -> str:
    return " ".join(str(exc).split())[:300]


def confirm_gone(rid: str, name: str, code: str, owner: str | None, caller: Callable[[], str] | None) -> str:
    """A NotFound is "gone" only when the credentials are the instance's account (else EC2 answers NotFound for
    a request of another account: the cancel reached the wrong one)."""
    if owner is None or caller is None:
        raise _refused(name, rid, f"{code}, and the instance's account is not known, so it cannot be told from "
                       "credentials of another account")
    try:
        account = caller()
    except Exception as exc:  # any failure to tell the account refuses the delete
        raise _refused(name, rid, f"{code}; sts get-caller-identity failed: {type(exc).__name__}: {_flat(exc)}") from None
    if account != owner:
        raise _refused(name, rid, f"{code} in account {account}, but the instance is in account {owner}: the "
                       "credentials reach another account", "Set the stack's aws:profile, keys or aws:assumeRole to "
                       "the instance's account and run the operation again")
    return f"{name}: spot request {rid} is gone already ({code})"


def cancel_request(ec2: Any, rid: str, name: str, *, owner: str | None = None,
                   caller: Callable[[], str] | None = None) -> str:
    """Cancel ``rid``; what happened in one line. Raises ``SpotCancelRefusedError`` unless the request is ended, or
    gone from the instance's own account ``owner`` (``caller`` says which account the credentials are)."""
    from botocore.exceptions import ClientError

    try:
        answer = ec2.cancel_spot_instance_requests(SpotInstanceRequestIds=[rid])
    except ClientError as exc:
        code = str(exc.response.get("Error", {}).get("Code", ""))
        if code in GONE_CODES:
            return confirm_gone(rid, name, code, owner, caller)
        raise _refused(name, rid, f"{code or 'no error code'}: {_flat(exc)}") from None
    except Exception as exc:  # any failure (a parse error too) keeps the instance
        raise _refused(name, rid, f"{type(exc).__name__}: {_flat(exc)}", "Run the operation again") from None
    states = {str(item.get("State")) for item in answer.get("CancelledSpotInstanceRequests") or []
              if item.get("SpotInstanceRequestId") == rid}
    if not states or not states <= ENDED_STATES:
        raise SpotCancelRefusedError(f"{name}: EC2 answered the cancel of spot request {rid} with state "
                                f"{', '.join(sorted(states)) or 'none'} (accepted: {', '.join(sorted(ENDED_STATES))}); "
                                "the instance is not deleted. Run the operation again")
    return f"{name}: spot request {rid} {', '.join(sorted(states))}"


HOOK_NAME = "gpulease-cancel-spot-request"
"""The one hook name of every gpulease program. The engine stores a resource's hook names in its state and, deleting
it, fails the step when one is not registered by the program running now ("hook %q was not registered",
pulumi/pulumi ``pkg/resource/deploy/deployment.go`` ``RunHooks``); it also refuses a second registration of a
name ("resource hook already registered", ``pkg/resource/deploy/resource_hooks.go``). One stable name, registered
by every program whatever it holds, serves every instance that ever carried it."""


def cancel_before_delete(args: pulumi.ResourceHookArgs) -> None:
    """The hook's callback: everything from what the engine passes (the instance's old outputs), nothing from the
    program, so an instance that left the program (renamed, parked, dropped, made on-demand) is served too."""
    outputs = args.old_outputs or {}
    rid = request_id(outputs)
    if rid is None:
        return
    name = args.name or str(args.id)
    region, owner = where(outputs)
    if region is None:
        raise _refused(name, rid, "its outputs name no region (arn, availabilityZone)")
    try:
        session = SESSION(region)
        ec2 = ec2_client(session, region)
    except Exception as exc:  # no credentials: the delete waits
        raise _refused(name, rid, f"the stack's AWS credentials: {type(exc).__name__}: {_flat(exc)}") from None

    def caller() -> str:
        return str(session.client("sts", region_name=region, config=aws_credentials.bounded_config())
                   .get_caller_identity()["Account"])

    pulumi.log.info(cancel_request(ec2, rid, name, owner=owner, caller=caller))


_REGISTERED: dict[str, pulumi.ResourceHook] = {}


def register_program_hook() -> pulumi.ResourceHook:
    """Register the program's one hook (once per program run: ``components.program``), whatever it holds."""
    hook = pulumi.ResourceHook(HOOK_NAME, cancel_before_delete)
    _REGISTERED[HOOK_NAME] = hook
    return hook


def program_hook() -> pulumi.ResourceHook:
    """The hook this program registered (registering it when no program entry did, as a test's own program)."""
    return _REGISTERED.get(HOOK_NAME) or register_program_hook()


def spot_hooks() -> pulumi.ResourceHookBinding:
    """A spot instance's hooks: the cancel before it is deleted."""
    return pulumi.ResourceHookBinding(before_delete=[program_hook()])
