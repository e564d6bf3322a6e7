"""User-data for one experiment as a Pulumi output: the bootstrap settings filled from the created resources."""

from __future__ import annotations

import pulumi

from components.spec.experiment import ExperimentSpec
from components.userdata.cloudinit import pack_user_data, render_user_data_base64
from components.userdata.cluster import ClusterSettings
from components.userdata.settings import settings_for
from gpulease.core import vocabulary as v

# Stand-ins of the real length for a data disk id not known before the disk exists (the size check runs first).
_PLACEHOLDER_DISK_IDS = {"aws": "vol-00000000000000000", "alicloud": "d-0000000000000000000x"}


def experiment_user_data(
    spec: ExperimentSpec,
    *,
    cloud: str,
    region: str,
    stack: str,
    checkpoint_uri: str,
    data_disk_id: pulumi.Input[str],
    tools_bucket: str,
    tools_prefix: str,
    nvidia_driver: str,
    cluster: ClusterSettings | None = None,
) -> pulumi.Output[str]:
    """Base64 cloud-init, always gzipped, at least a quarter under AWS's 16 KB and Alibaba's 32 KB user-data limits.
    ``nvidia_driver`` is the image family's driver fact (``ExperimentSpec.nvidia_driver``, from the cloud's spec rules).

    The deadline is not in it: the watchdog reads the instance's deadline tag, so a renewal changes no user-data."""
    return pulumi.Output.from_input(data_disk_id).apply(
        lambda disk_id: render_user_data_base64(
            settings_for(
                spec,
                cloud=cloud,
                region=region,
                stack=stack,
                checkpoint_uri=None if checkpoint_uri == v.NO_CHECKPOINTS else checkpoint_uri,
                data_disk_id=disk_id,
                tools_bucket=tools_bucket,
                tools_prefix=tools_prefix,
                nvidia_driver=nvidia_driver,
                cluster=cluster,
            )
        )
    )


def check_user_data(
    spec: ExperimentSpec, *, cloud: str, region: str, stack: str, checkpoint_uri: str, tools_bucket: str,
    tools_prefix: str, nvidia_driver: str, cluster: ClusterSettings | None = None,
) -> None:
    """Render the experiment's user-data once before anything is registered: ``UserDataTooLargeError`` (a user error
    naming the stack, the experiment and the fields to shorten) instead of a failure halfway through an update."""
    existing = spec.data_disk.existing_volume_id
    pack_user_data(
        settings_for(
            spec,
            cloud=cloud,
            region=region,
            stack=stack,
            checkpoint_uri=None if checkpoint_uri == v.NO_CHECKPOINTS else checkpoint_uri,
            data_disk_id=existing or _PLACEHOLDER_DISK_IDS[cloud],
            tools_bucket=tools_bucket,
            tools_prefix=tools_prefix,
            nvidia_driver=nvidia_driver,
            cluster=cluster,
        )
    )
