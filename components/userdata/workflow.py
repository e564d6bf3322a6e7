"""What the instance needs for the workflow before training (``instance/staging.py``, the preparation phase and
the ready record a bake waits for), as settings fields and the storage CLI commands it runs.

The bucket sources are copied with the same storage CLIs and credential handling as the checkpoint sync
(``instance/cloud_access.storage_command``): ``aws s3 sync`` / ``aws s3 cp`` (the CLI's default endpoint for the
region, over HTTPS) and ``ossutil cp -r -u`` through the bucket region's ``https://oss-<region>-internal``
endpoint (the public endpoint for a bucket in another region: an internal endpoint serves its own region only,
"Regions and endpoints", https://www.alibabacloud.com/help/en/oss/user-guide/regions-and-endpoints). A prefix is
copied skipping what is already there (``sync``, ``-u``), and so is one object on Alibaba Cloud (``cp -u``); one
object on AWS (``aws s3 cp``) is copied again whole by a rerun that stages it (docs/workflow.md).

A private hub token is read on the instance: on AWS with ``aws secretsmanager get-secret-value`` (the role's
credentials, the value on stdout only); on Alibaba Cloud with the KMS ``GetSecretValue`` API signed with the
role's STS credentials (``instance/staging.py``).
"""

from __future__ import annotations

from typing import Any

from components.image_bake import CONTROL_FOLDER, READY_FOLDER, record_uri
from components.spec.experiment import ExperimentSpec

# ossutil's credentials and endpoint, filled on the instance (the checkpoint sync's templates use the same).
OSS_AUTH = ["-e", "{endpoint}", "-c", "{oss_config}", "--sign-version", "v4", "--region", "{region}"]
STAGE_COMMANDS: dict[str, dict[str, list[str]]] = {
    "aws": {
        "prefix": ["aws", "s3", "sync", "{src}", "{dst}", "--region", "{region}", "--no-progress", "--only-show-errors"],
        "object": ["aws", "s3", "cp", "{src}", "{dst}", "--region", "{region}", "--no-progress", "--only-show-errors"],
    },
    "alicloud": {
        "prefix": ["ossutil", "cp", "-r", "-u", "-f", "{src}", "{dst}", *OSS_AUTH],
        "object": ["ossutil", "cp", "-u", "-f", "{src}", "{dst}", *OSS_AUTH],
    },
}
SECRET_COMMANDS: dict[str, list[str] | None] = {
    "aws": ["aws", "secretsmanager", "get-secret-value", "--secret-id", "{secret}", "--region", "{region}",
            "--query", "SecretString", "--output", "text"],
    "alicloud": None,  # the KMS API, signed on the instance (instance/staging.py)
}
# The ready record a bake waits for (components/image_bake.py): one object per instance that passed readiness.
READY_RECORD_COMMANDS: dict[str, list[str]] = {
    "aws": ["aws", "s3", "cp", "{file}", "{dst}{instance}.json", "--region", "{region}",
            "--only-show-errors"],
    "alicloud": ["ossutil", "cp", "-f", "{file}", "{dst}{instance}.json", *OSS_AUTH],
}


def source_settings(spec: ExperimentSpec) -> list[dict[str, Any]]:
    """Each source as the instance reads it: uri, to, and what was given of sha256, revision, region."""
    out = []
    for src in spec.data.sources:
        item: dict[str, Any] = {"uri": src.uri, "to": src.to}
        if src.sha256:
            item["sha256"] = src.sha256
        if src.effective_revision:
            item["revision"] = src.effective_revision
        if src.region:
            item["region"] = src.region
        out.append(item)
    return out


def workflow_settings(spec: ExperimentSpec, cloud: str, checkpoint_uri: str | None) -> dict[str, Any]:
    """The settings fields of the workflow: only what differs from the defaults, so that a stack that uses none of
    it gets the same settings as before."""
    fields: dict[str, Any] = {}
    if spec.phase == "prep":
        fields.update(phase="prep", idle_source="cpu", idle_cpu_percent=spec.prep.idle_cpu_percent)
    if spec.data.sources:
        fields.update(data_sources=source_settings(spec), stage_commands=STAGE_COMMANDS[cloud])
    if spec.data.hub_token_secret:
        fields.update(hub_token_secret=spec.data.hub_token_secret, secret_command=SECRET_COMMANDS[cloud])
    if checkpoint_uri is not None:
        # Always, not only with image.bake: turning the bake on must not change the user-data (and so replace the
        # instance it is about to image).
        fields["ready_record_command"] = READY_RECORD_COMMANDS[cloud]
        fields["ready_record_uri"] = record_uri(checkpoint_uri, READY_FOLDER)
        fields["control_uri"] = record_uri(checkpoint_uri, CONTROL_FOLDER)
    return fields
