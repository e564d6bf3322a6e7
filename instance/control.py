"""The control area, shared by the run tools (standard library only, Python 3.10).

The ``control_uri`` setting (``s3://bucket/_gpulease/<checkpoint prefix>control/``: outside the checkpoint prefix,
whose lifecycle rule expires objects after ``keepDays``) holds what the instance reports to whoever cannot log in: ``ready.json`` (the
bootstrap), ``heartbeat.json`` (the watchdog, every few minutes), ``verify.json`` (the verification) and
``manifest.json`` (the run manifest). Each is written locally first (atomically: a reader never sees half of it),
then copied with the settings' ``control_upload_command`` (``aws s3 cp`` / ``ossutil cp``) and the instance role's
credentials (``cloud_access.storage_command``), bounded in time like every external call on the instance.
"""

from __future__ import annotations

import json
import os
from datetime import datetime, timezone
from typing import Any

try:
    from instance import bounds
    from instance import cloud_access as ca
    from instance import instance_state as st
except ImportError:  # on the instance: cloud_access.py is installed next to this file
    import bounds  # type: ignore[no-redef]
    import cloud_access as ca  # type: ignore[no-redef]
    import instance_state as st  # type: ignore[no-redef]

UTC = timezone.utc  # noqa: UP017 - the instance may run Python 3.10 (Ubuntu 22.04), before datetime.UTC
CONTROL_DIR = "_gpulease/"
# Where each cloud's metadata service lists the instance's own facts (AWS IMDS categories; Alibaba Cloud's
# metadata list: https://www.alibabacloud.com/help/en/ecs/user-guide/view-instance-metadata).
INSTANCE_FACTS = {
    "aws": {"id": "/latest/meta-data/instance-id", "type": "/latest/meta-data/instance-type",
            "imageId": "/latest/meta-data/ami-id"},
    "alicloud": {"id": "/latest/meta-data/instance-id", "type": "/latest/meta-data/instance/instance-type",
                 "imageId": "/latest/meta-data/image-id"},
}


def now_stamp() -> str:
    return datetime.now(UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


def now_epoch() -> float:
    return datetime.now(UTC).timestamp()


def write_json(path: str, value: Any) -> None:
    """``value`` as JSON at ``path`` through a temporary file and a rename."""
    os.makedirs(os.path.dirname(path) or ".", exist_ok=True)
    tmp = f"{path}.{os.getpid()}.tmp"
    with open(tmp, "w", encoding="utf-8") as fh:
        json.dump(value, fh, indent=2, sort_keys=True)
        fh.write("\n")
    os.replace(tmp, path)


def read_json(path: str) -> dict[str, Any]:
    """A JSON object from ``path``, read strictly (``instance_state.read_state_file``: a regular file, never a FIFO
    or a link, bounded); {} when it is missing or unusable (a report is never fatal)."""
    return st.read_or_empty(path)


def metadata(settings: dict[str, Any]) -> ca.Metadata:
    return ca.Metadata(settings.get("cloud", "aws"), settings.get("metadata_url"),
                       bounds.value("metadata_read", settings))


def instance_facts(settings: dict[str, Any], service: ca.Metadata | None = None) -> dict[str, str | None]:
    """The instance's id, type and image id from the metadata service (None for what it does not answer)."""
    service = service or metadata(settings)
    facts: dict[str, str | None] = {}
    for key, path in INSTANCE_FACTS.get(settings.get("cloud", "aws"), INSTANCE_FACTS["aws"]).items():
        try:
            facts[key] = service.value(path)
        except ca.MetadataError:
            facts[key] = None
    return facts


def control_uri(settings: dict[str, Any], name: str) -> str | None:
    """``<control_uri>name``: the instance's reports, outside the expiring checkpoint prefix (the program's
    ``control_uri`` setting, ``components.image_bake.CONTROL_FOLDER``); None without a bucket."""
    uri = settings.get("control_uri")
    return f"{uri}{name}" if uri else None


def checkpoint_area_uri(settings: dict[str, Any], name: str) -> str | None:
    """``<checkpoint_uri>_gpulease/name``: the uploaded logs, still beside the checkpoints."""
    uri = settings.get("checkpoint_uri")
    return f"{uri}{CONTROL_DIR}{name}" if uri else None


def upload_call(settings: dict[str, Any], local: str, name: str, service: ca.Metadata | None = None,
                credentials: ca.RoleCredentials | None = None, dst: str | None = None) -> ca.StorageCall | None:
    """The storage CLI call copying ``local`` to ``dst`` (default ``control_uri(settings, name)``); None without a
    bucket. Raises ``cloud_access.CredentialsError`` / ``OSError`` when the credentials cannot be had."""
    dst, template = dst or control_uri(settings, name), settings.get("control_upload_command")
    if not dst or not template:
        return None
    service = service or metadata(settings)
    return ca.storage_command(
        list(template), {"src": local, "dst": dst}, cloud=settings.get("cloud", "aws"),
        region=settings.get("region", ""), metadata=service,
        credentials=credentials if credentials is not None else ca.RoleCredentials(service),
    )


def publish(settings: dict[str, Any], local: str, name: str, timeout: float = bounds.value("bucket_copy")) -> tuple[bool, str]:
    """Copy ``local`` to the control area, bounded by ``timeout`` seconds: (copied, what happened)."""
    try:
        call = upload_call(settings, local, name)
    except (ca.CredentialsError, OSError) as exc:
        return False, f"no credentials for the storage CLI: {exc}"
    if call is None:
        return False, "no checkpoint bucket: kept on the instance only"
    try:
        code, tail = ca.run_bounded(call.argv, timeout, env=call.env)
    finally:
        call.close()
    if code == 0:
        return True, f"copied to {control_uri(settings, name)}"
    return False, f"copy to {control_uri(settings, name)} " + (
        f"exited {code}: {tail[-300:]}" if code is not None else f"took longer than {timeout:.0f} s")
