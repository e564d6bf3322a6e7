"""The Pulumi program: read the stack config, validate it, declare the experiment, export its outputs."""

from __future__ import annotations

import json
import os
from typing import Any

import pulumi
from pulumi.runtime import config as runtime_config

from components.aws.spot_hook import register_program_hook
from components.aws_credentials import provider_credentials
from components.experiment import GpuExperiment
from components.image_bake import BAKED_IMAGE_OUTPUT
from components.spec.load import CONFIG_NAMESPACE, PROJECT_KEY, STACK_FILE_ENV, SpecError, load_stack_spec
from components.spec.prompted import PROMPT_NAMESPACE, translated
from components.spec.regions import PROVIDER_REGION_KEYS
from gpulease.core.errors import UserError


def gpulease_config() -> dict[str, Any]:
    """Every ``gpulease:*`` key of the stack config (a `pulumi new` stack's prompted ``gpulease-new:*`` values as
    its experiment, ``components/spec/prompted.py``), structured values parsed from their JSON form, and the
    providers' region keys as the CLI hands them (text), for the spec's region check."""
    merged = {**runtime_config.get_config_env(), **runtime_config.CONFIG.get()}
    out: dict[str, Any] = {}
    for key, raw in merged.items():
        if key in PROVIDER_REGION_KEYS.values():  # text as the CLI hands it: the spec checks the region's name
            out[key] = raw
            continue
        if key.startswith(f"{PROMPT_NAMESPACE}:"):  # a `pulumi new` stack's answers: text, as the template reads them
            out[key] = raw
            continue
        if not key.startswith(f"{CONFIG_NAMESPACE}:"):
            continue
        try:
            out[key] = json.loads(raw) if isinstance(raw, str) else raw
        except json.JSONDecodeError:
            out[key] = raw
    return translated(out)


def main(config: dict[str, Any] | None = None, source: str | None = None) -> None:
    """Declare the stack's experiment; ``config`` (``gpulease:*`` keys) instead of the stack's own config, for a
    program that builds it (the ``pulumi new`` template: ``templates/gpulease-experiment``)."""
    stack = pulumi.get_stack()
    source = source or os.environ.get(STACK_FILE_ENV) or f"stacks/Pulumi.{stack}.yaml"
    try:
        given = gpulease_config() if config is None else config
        spec = load_stack_spec(stack, {**given, PROJECT_KEY: pulumi.get_project()}, source=source)
        if spec.cloud == "aws":  # the kit's own cancels use the provider's credentials, or nothing: one line
            provider_credentials({**runtime_config.get_config_env(), **runtime_config.CONFIG.get()}, source)
        # The spot instances' delete hook, by its one stable name, in every program (any cloud, any market): the
        # engine fails the delete of a resource whose hook the running program did not register.
        register_program_hook()
        experiment = GpuExperiment(spec)
    except SpecError as exc:  # found after loading (a lookup, the catalog): it names the same file
        raise pulumi.RunError(str(exc.at(source))) from None
    except UserError as exc:
        # A user mistake: one message, no traceback, nothing registered.
        raise pulumi.RunError(str(exc)) from None
    experiments = experiment.experiments
    pulumi.export("experiments", experiments)
    pulumi.export("bucket", experiment.bucket)
    if experiment.baked is not None:  # the personal image other stacks use with image.fromStack
        pulumi.export(BAKED_IMAGE_OUTPUT, experiment.baked)
    if spec.kind == "experiment":
        for key, value in experiments[spec.base.name].items():
            pulumi.export(key, value)
