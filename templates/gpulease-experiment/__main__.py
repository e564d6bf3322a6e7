"""A gpulease experiment made with `pulumi new`: the prompted values (the ``gpulease-new:*`` config keys) become
the experiment's spec (``experiment_config.py``), then the gpulease program declares it."""

import pulumi
from experiment_config import CONFIG_KEY, experiment

from components.program import main

main({CONFIG_KEY: experiment(pulumi.Config("gpulease-new").get)}, source=f"Pulumi.{pulumi.get_stack()}.yaml")
