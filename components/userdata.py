"""User-data for one experiment as a Pulumi output: the bootstrap settings filled from the created resources."""

from __future__ import annotations

import pulumi

from components import vocabulary as v
from components.bootstrap import render_user_data_base64, settings_for
from components.spec import ExperimentSpec


def experiment_user_data(
    spec: ExperimentSpec,
    *,
    cloud: str,
    region: str,
    stack: str,
    deadline: pulumi.Input[str],
    checkpoint_uri: str,
    data_disk_id: pulumi.Input[str],
) -> pulumi.Output[str]:
    """Base64 cloud-init (gzipped when large), within AWS's 16 KB and Alibaba's 32 KB user-data limits."""
    return pulumi.Output.all(deadline, data_disk_id).apply(
        lambda args: render_user_data_base64(
            settings_for(
                spec,
                cloud=cloud,
                region=region,
                stack=stack,
                deadline=args[0],
                checkpoint_uri=None if checkpoint_uri == v.NO_CHECKPOINTS else checkpoint_uri,
                data_disk_id=args[1],
            )
        )
    )
