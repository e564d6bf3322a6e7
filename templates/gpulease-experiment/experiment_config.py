"""The experiment a `pulumi new` stack describes, from the values its prompts saved: the kit's own reading
(``components/spec/prompted.py``), which ``gpulease check``, ``up`` and ``down`` share."""

from components.spec.prompted import CONFIG_KEY, experiment, stack_config

__all__ = ["CONFIG_KEY", "experiment", "stack_config"]
