"""A gpulease experiment made with `pulumi new`: the prompted values (the ``gpulease-new:*`` config keys) become
the experiment's spec (``experiment_config.py``: the kit's ``components/spec/prompted.py``, which `gpulease check`,
`up` and `down` read the stack with too), then the gpulease program declares it. A stack whose file holds a spec of
its own (``gpulease:experiment`` or ``gpulease:sweep``, as `gpulease init` writes it) is declared from that."""

import pulumi

from components.program import main

main(source=f"Pulumi.{pulumi.get_stack()}.yaml")
