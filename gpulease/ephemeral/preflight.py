"""Checks run before anything is created: cloud credentials are present (found locally, no cloud call)."""

from __future__ import annotations

import os
from collections.abc import Mapping

from gpulease.core.errors import UserError


class CredentialsError(UserError):
    """No credentials for the stack's cloud; nothing was created."""


ALIBABA_KEY_PAIRS = (
    ("ALIBABA_CLOUD_ACCESS_KEY_ID", "ALIBABA_CLOUD_ACCESS_KEY_SECRET"),
    ("ALICLOUD_ACCESS_KEY", "ALICLOUD_SECRET_KEY"),
)
ALIBABA_OIDC = ("ALIBABA_CLOUD_ROLE_ARN", "ALIBABA_CLOUD_OIDC_PROVIDER_ARN", "ALIBABA_CLOUD_OIDC_TOKEN_FILE")


def check_aws(stack: str) -> str:
    """The source of the AWS credentials boto3's chain finds (env, profile, web identity...).

    Resolving the chain reads the environment and files only; role and web-identity credentials are fetched
    lazily, on first use, so no AWS API is called here."""
    import boto3

    credentials = boto3.session.Session().get_credentials()
    if credentials is None:
        raise CredentialsError(
            f"stack '{stack}' runs on AWS but no AWS credentials were found (environment, AWS_PROFILE, "
            "~/.aws, web identity). In GitHub Actions use aws-actions/configure-aws-credentials with "
            "role-to-assume; locally set AWS_PROFILE. Nothing was created."
        )
    return str(getattr(credentials, "method", "unknown"))


def check_alicloud(stack: str, env: Mapping[str, str] | None = None) -> str:
    env = os.environ if env is None else env
    for key_id, secret in ALIBABA_KEY_PAIRS:
        if env.get(key_id) and env.get(secret):
            return key_id
        if env.get(key_id) or env.get(secret):
            missing = secret if env.get(key_id) else key_id
            raise CredentialsError(f"stack '{stack}': {missing} is not set (its pair is). Nothing was created.")
    if all(env.get(name) for name in ALIBABA_OIDC):
        return "oidc"
    raise CredentialsError(
        f"stack '{stack}' runs on Alibaba Cloud but no credentials were found; accepted: "
        "ALIBABA_CLOUD_ACCESS_KEY_ID and ALIBABA_CLOUD_ACCESS_KEY_SECRET (optionally ALIBABA_CLOUD_SECURITY_TOKEN), "
        f"or OIDC role assumption with {', '.join(ALIBABA_OIDC)}. Nothing was created."
    )


def check_credentials(cloud: str, stack: str) -> str:
    """Raise ``CredentialsError`` unless credentials for ``cloud`` are available; return where they come from."""
    if cloud == "aws":
        return check_aws(stack)
    if cloud == "alicloud":
        return check_alicloud(stack)
    raise CredentialsError(f"stack '{stack}': unknown cloud {cloud!r}")
