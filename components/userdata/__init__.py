"""User-data: what the program hands each instance, and the contract between the program and the instance.

``settings.BootstrapSettings`` is that contract: the components fill it from the spec and the created resources
(``settings.settings_for``), ``cloudinit.render_user_data`` turns it into cloud-init user-data, and the
instance-side tools (``instance/``: ``instance_setup.py``, data disk, NVIDIA driver where the image has none,
readiness; ``watchdog.py``, deadline,
idle, spot notice, checkpoint sync; on CI stacks only, ``job_agent.py``, the job sent through the bucket) read the
same settings back from ``SETTINGS_PATH`` (one source of truth).

The tools are standard-library files (``cloud_access.py`` is what they share), run by systemd, so they work on
any image with python3 (the Deep Learning AMIs and Ubuntu 22.04 on both clouds). They do not fit in user-data
with room to spare (AWS takes 16 KB, Alibaba Cloud 32 KB), so they travel as one object, a JSON bundle of the
files (``tools.tools_bundle``), under each experiment's checkpoint prefix in the bucket the stack creates (or in a
small bootstrap bucket of the stack's own when it has none); user-data carries the settings and
``fetch_tools.py``, which each service runs first: it reads the object with the instance role's credentials
(signed request, token-protected metadata) and installs it only when its SHA-256 is the one in the settings.

Every rendered user-data stays at least ``USER_DATA_MARGIN`` under its cloud's limit; ``pack_user_data`` refuses
one that would not (``experiment.check_user_data`` runs it before anything is registered).

This package imports no Pulumi except ``experiment`` (the user-data of one experiment as a Pulumi output).
"""

from __future__ import annotations

from components.userdata.cloudinit import (
    USER_DATA_LIMITS,
    USER_DATA_MARGIN,
    UserDataTooLargeError,
    cloud_config,
    decode_user_data,
    pack_user_data,
    render_user_data,
    render_user_data_base64,
)
from components.userdata.settings import (
    BUCKET_CHECK_COMMANDS,
    CLI_INSTALL_COMMANDS,
    INSTALL_DIR,
    JOB_AGENT_UNIT,
    JOB_COMMANDS,
    METADATA_URLS,
    MOUNT_POINT,
    NVIDIA_DRIVER_BRANCH,
    NVIDIA_DRIVER_PACKAGES,
    READY_UPLOAD_COMMANDS,
    SETTINGS_PATH,
    SETUP_UNIT,
    SYNC_COMMANDS,
    WATCHDOG_UNIT,
    BootstrapSettings,
    JobAgentSettings,
    ToolsObject,
    settings_for,
    settings_json,
)
from components.userdata.tools import (
    INSTANCE_DIR,
    TOOL_SCRIPTS,
    TOOLS_FOLDER,
    shipped_source,
    tools_bundle,
    tools_key,
    tools_sha256,
)

__all__ = [
    "BUCKET_CHECK_COMMANDS",
    "CLI_INSTALL_COMMANDS",
    "INSTALL_DIR",
    "INSTANCE_DIR",
    "JOB_AGENT_UNIT",
    "JOB_COMMANDS",
    "METADATA_URLS",
    "MOUNT_POINT",
    "NVIDIA_DRIVER_BRANCH",
    "NVIDIA_DRIVER_PACKAGES",
    "READY_UPLOAD_COMMANDS",
    "SETTINGS_PATH",
    "SETUP_UNIT",
    "SYNC_COMMANDS",
    "TOOLS_FOLDER",
    "TOOL_SCRIPTS",
    "USER_DATA_LIMITS",
    "USER_DATA_MARGIN",
    "WATCHDOG_UNIT",
    "BootstrapSettings",
    "JobAgentSettings",
    "ToolsObject",
    "UserDataTooLargeError",
    "cloud_config",
    "decode_user_data",
    "pack_user_data",
    "render_user_data",
    "render_user_data_base64",
    "settings_for",
    "settings_json",
    "shipped_source",
    "tools_bundle",
    "tools_key",
    "tools_sha256",
]
