"""What runs on the instance, rendered into user-data from the spec.

``BootstrapSettings`` is the contract between the components and the instance: the components fill it from
the spec and the created resources, ``render_user_data`` turns it into cloud-init user-data, and the
watchdog reads the same settings back from ``SETTINGS_PATH`` on the instance (one source of truth).
"""

from __future__ import annotations

import json
from typing import Literal

from pydantic import BaseModel, ConfigDict

from components.spec import ExperimentSpec

SETTINGS_PATH = "/etc/gpulease/settings.json"
MOUNT_POINT = "/data"


class BootstrapSettings(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)

    cloud: Literal["aws", "alicloud"]
    region: str
    stack: str
    experiment: str
    deadline: str
    """RFC 3339 UTC: the watchdog shuts the instance down at this moment."""
    max_runtime_hours: float
    idle_minutes: int
    idle_gpu_percent: int
    warn_minutes: int
    warn_hook: str | None = None
    checkpoint_uri: str | None = None
    """s3://bucket/prefix/ or oss://bucket/prefix/; None when the experiment keeps no checkpoints."""
    checkpoint_interval_minutes: int
    checkpoint_hook: str | None = None
    data_disk_id: str
    """vol-... on AWS, d-... on Alibaba Cloud: the bootstrap finds the device by this id."""
    mount_point: str = MOUNT_POINT


def settings_json(settings: BootstrapSettings) -> str:
    return json.dumps(settings.model_dump(), indent=2, sort_keys=True)


def render_user_data(settings: BootstrapSettings) -> str:
    """cloud-init user-data that writes the settings file for the instance-side tools."""
    body = settings_json(settings)
    indented = "\n".join("      " + line for line in body.splitlines())
    return (
        "#cloud-config\n"
        "write_files:\n"
        f"  - path: {SETTINGS_PATH}\n"
        "    permissions: '0644'\n"
        "    content: |\n"
        f"{indented}\n"
    )


def settings_for(
    spec: ExperimentSpec,
    *,
    cloud: str,
    region: str,
    stack: str,
    deadline: str,
    checkpoint_uri: str | None,
    data_disk_id: str,
) -> BootstrapSettings:
    """The settings for one experiment, taken from its spec and the resources created for it."""
    return BootstrapSettings(
        cloud=cloud,
        region=region,
        stack=stack,
        experiment=spec.name,
        deadline=deadline,
        max_runtime_hours=spec.max_runtime_hours,
        idle_minutes=spec.idle_minutes,
        idle_gpu_percent=spec.watchdog.idle_gpu_percent,
        warn_minutes=spec.watchdog.warn_minutes,
        warn_hook=spec.watchdog.warn_hook,
        checkpoint_uri=checkpoint_uri,
        checkpoint_interval_minutes=spec.checkpoints.interval_minutes,
        checkpoint_hook=spec.checkpoints.hook,
        data_disk_id=data_disk_id,
    )
