"""The AWS credentials of the stack's provider, for the kit's own EC2 calls around it (the spot instance's delete
hook, ``gpulease down``'s cancel by tag and its after-check, ``gpulease up``'s cancel before parking).

Those calls must reach the account the provider deploys into: boto3's default chain may answer from another one,
where EC2 knows no such request (``InvalidSpotInstanceRequestID.NotFound``) and a cancel would seem done. The
provider's keys (pulumi-aws installation-configuration, https://www.pulumi.com/registry/packages/aws/installation-configuration/)
honoured here: ``aws:profile``, ``aws:accessKey``/``aws:secretKey``/``aws:token`` (static keys), ``aws:assumeRole``
(one role) and ``aws:assumeRoles`` (a chain, assumed in order), each role with ``roleArn`` and optionally
``sessionName``, ``externalId``, ``policy``, ``policyArns``, ``sourceIdentity``, ``tags``, ``transitiveTagKeys``,
``duration`` (STS AssumeRole,
https://docs.aws.amazon.com/STS/latest/APIReference/API_AssumeRole.html). A key that changes which account or endpoint
the provider talks to and that is not honoured here (``REFUSED``) is refused with one line naming it.

The module imports no Pulumi: the CLI builds the same session from the stack file, the program from its config."""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from gpulease.core.errors import UserError

PREFIX = "aws:"
REFUSED = ("sharedCredentialsFiles", "sharedConfigFiles", "assumeRoleWithWebIdentity", "endpoints", "stsRegion",
           "customCaBundle", "useFipsEndpoint", "ec2MetadataServiceEndpoint", "ec2MetadataServiceEndpointMode")
"""Provider keys that change the account, the credentials or the endpoint and that the kit's calls cannot follow."""
ROLE_FIELDS = ("roleArn", "sessionName", "externalId", "policy", "policyArns", "sourceIdentity", "tags",
               "transitiveTagKeys", "duration")
CONNECT_TIMEOUT_SECONDS = 5
READ_TIMEOUT_SECONDS = 20
MAX_ATTEMPTS = 5
"""botocore's retries of each STS and EC2 call (standard mode: throttling, 5xx and connection errors)."""
SESSION_NAME = "gpulease"


@dataclass(frozen=True)
class ProviderCredentials:
    """What the provider's config says about credentials; all None/empty: boto3's default chain, as the provider."""

    profile: str | None = None
    access_key: str | None = None
    secret_key: str | None = None
    token: str | None = None
    roles: tuple[dict[str, Any], ...] = field(default_factory=tuple)


def _value(raw: Any) -> Any:
    """A config value as the engine hands it (text, JSON for structured values) or as the stack file holds it."""
    if isinstance(raw, str) and raw[:1] in "[{":
        try:
            return json.loads(raw)
        except json.JSONDecodeError:
            return raw
    return raw


def _text(source: str, key: str, raw: Any) -> str | None:
    if raw is None:
        return None
    if not isinstance(raw, str) or not raw.strip():
        raise UserError(f"{source}: {PREFIX}{key} must be non-empty text (got {type(raw).__name__}); accepted: the "
                        "value the AWS provider reads")
    return raw


def _role(source: str, key: str, raw: Any) -> dict[str, Any]:
    if not isinstance(raw, Mapping):
        raise UserError(f"{source}: {key} must be a mapping with roleArn (got {type(raw).__name__})")
    unknown = sorted(set(raw) - set(ROLE_FIELDS))
    if unknown:
        raise UserError(f"{source}: {key}.{unknown[0]} is not a role field the kit's own AWS calls can honour; "
                        f"accepted: {', '.join(ROLE_FIELDS)}")
    arn = raw.get("roleArn")
    if not isinstance(arn, str) or not arn.startswith("arn:"):
        raise UserError(f"{source}: {key}.roleArn must be a role ARN (arn:aws:iam::ACCOUNT:role/NAME), got {arn!r}")
    return dict(raw)


def provider_credentials(config: Mapping[str, Any], source: str) -> ProviderCredentials:
    """The provider's credential keys of a stack's config (``aws:*``), or one line naming a key not honoured."""
    keys = {k.removeprefix(PREFIX): _value(v) for k, v in config.items() if k.startswith(PREFIX)}
    for key in REFUSED:
        if key in keys:
            raise UserError(f"{source}: {PREFIX}{key} is set, but the kit's own AWS calls (the spot request cancels) "
                            "cannot follow it and could reach another account; accepted: aws:profile, aws:accessKey/"
                            "aws:secretKey/aws:token, aws:assumeRole or aws:assumeRoles")
    if "assumeRole" in keys and "assumeRoles" in keys:
        raise UserError(f"{source}: aws:assumeRole and aws:assumeRoles are both set; accepted: one of them")
    roles: list[dict[str, Any]] = []
    if keys.get("assumeRole") is not None:
        roles.append(_role(source, "aws:assumeRole", keys["assumeRole"]))
    if keys.get("assumeRoles") is not None:
        chain = keys["assumeRoles"]
        if not isinstance(chain, list):
            raise UserError(f"{source}: aws:assumeRoles must be a list of roles (got {type(chain).__name__})")
        roles += [_role(source, f"aws:assumeRoles[{i}]", r) for i, r in enumerate(chain)]
    access, secret = _text(source, "accessKey", keys.get("accessKey")), _text(source, "secretKey", keys.get("secretKey"))
    if (access is None) != (secret is None):
        raise UserError(f"{source}: aws:{'secretKey' if secret is None else 'accessKey'} is missing; accepted: "
                        "aws:accessKey and aws:secretKey together, or neither")
    return ProviderCredentials(profile=_text(source, "profile", keys.get("profile")), access_key=access,
                               secret_key=secret, token=_text(source, "token", keys.get("token")), roles=tuple(roles))


def bounded_config() -> Any:
    from botocore.config import Config

    return Config(connect_timeout=CONNECT_TIMEOUT_SECONDS, read_timeout=READ_TIMEOUT_SECONDS,
                  retries={"mode": "standard", "max_attempts": MAX_ATTEMPTS})


def _assume_args(role: Mapping[str, Any]) -> dict[str, Any]:
    args: dict[str, Any] = {"RoleArn": role["roleArn"], "RoleSessionName": role.get("sessionName") or SESSION_NAME}
    for name, arg in (("externalId", "ExternalId"), ("policy", "Policy"), ("sourceIdentity", "SourceIdentity")):
        if role.get(name):
            args[arg] = role[name]
    if role.get("policyArns"):
        args["PolicyArns"] = [{"arn": a} for a in role["policyArns"]]
    if role.get("tags"):
        args["Tags"] = [{"Key": k, "Value": str(v)} for k, v in dict(role["tags"]).items()]
    if role.get("transitiveTagKeys"):
        args["TransitiveTagKeys"] = list(role["transitiveTagKeys"])
    return args


def session(creds: ProviderCredentials, region: str) -> Any:
    """A boto3 session with the provider's credentials in ``region``: the profile or static keys, then each role
    assumed in order through STS (bounded: timeouts and botocore's retries)."""
    import boto3

    current = boto3.Session(profile_name=creds.profile, aws_access_key_id=creds.access_key,
                            aws_secret_access_key=creds.secret_key, aws_session_token=creds.token, region_name=region)
    for role in creds.roles:
        answer = current.client("sts", config=bounded_config()).assume_role(**_assume_args(role))["Credentials"]
        current = boto3.Session(aws_access_key_id=answer["AccessKeyId"], aws_secret_access_key=answer["SecretAccessKey"],
                                aws_session_token=answer["SessionToken"], region_name=region)
    return current


def client(creds: ProviderCredentials, service: str, region: str) -> Any:
    """A bounded client of ``service`` in ``region`` with the provider's credentials."""
    return session(creds, region).client(service, region_name=region, config=bounded_config())
