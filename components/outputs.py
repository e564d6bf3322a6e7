"""Cloud-neutral pieces of a GPU experiment component: the checkpoint prefix of a run and its stack outputs."""

from __future__ import annotations

from collections.abc import Callable

import pulumi

from components.spec.experiment import ExperimentSpec
from components.spec.load import StackSpec


def checkpoint_prefix(spec: StackSpec, exp: ExperimentSpec) -> str:
    """The object prefix a run checkpoints under: a sweep gives each run its own folder below the shared prefix."""
    return f"{exp.checkpoints.prefix}{exp.name}/" if spec.kind == "sweep" else exp.checkpoints.prefix


def experiment_outputs(
    exp: ExperimentSpec,
    *,
    instance_id: pulumi.Output[str],
    public_ip: pulumi.Output[str],
    instance_type: str,
    data_volume_id: pulumi.Input[str],
    availability_zone: pulumi.Input[str],
    checkpoint_uri: str,
    deadline: pulumi.Input[str],
    session_command: Callable[[str], str],
) -> dict[str, pulumi.Input]:
    """The per-experiment stack outputs; ``sshCommand`` is ``ssh`` in ssh mode, else the cloud's session command
    built from the instance id by ``session_command``."""
    access = (
        public_ip.apply(lambda ip, user=exp.ssh.user: f"ssh {user}@{ip}")
        if exp.ssh.mode == "ssh"
        else instance_id.apply(session_command)
    )
    return {
        "phase": exp.phase,
        "instanceId": instance_id,
        "instanceType": instance_type,
        "market": exp.market,
        "publicIp": public_ip,
        "sshCommand": access,
        "dataVolumeId": data_volume_id,
        "availabilityZone": availability_zone,
        "checkpointUri": checkpoint_uri,
        "deadline": deadline,
    }


def parked_outputs(
    exp: ExperimentSpec, *, data_volume_id: pulumi.Input[str], availability_zone: pulumi.Input[str],
    checkpoint_uri: str, deadline: pulumi.Input[str],
) -> dict[str, pulumi.Input]:
    """A parked experiment's outputs: no instance (``instanceId`` None), the disk and the bucket it keeps."""
    return {
        "phase": "parked",
        "instanceId": None,
        "dataVolumeId": data_volume_id,
        "availabilityZone": availability_zone,
        "checkpointUri": checkpoint_uri,
        "deadline": deadline,
    }
