"""A gpulease experiment made with `pulumi new`: the prompted values (the ``gpulease-new:*`` config keys) become
the experiment's spec (``experiment_config.py``), then the gpulease program declares it. A stack whose file holds a
spec of its own (``gpulease:experiment`` or ``gpulease:sweep``, as `gpulease init` writes it) is declared from that."""

import pulumi
from experiment_config import CONFIG_KEY, experiment

from components.program import main

_own = pulumi.Config("gpulease")
_given = _own.get("experiment") is not None or _own.get("sweep") is not None
main(None if _given else {CONFIG_KEY: experiment(pulumi.Config("gpulease-new").get)},
     source=f"Pulumi.{pulumi.get_stack()}.yaml")
