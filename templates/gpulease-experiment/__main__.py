"""A gpulease experiment made with `pulumi new`: the prompted values (the ``gpulease-new:*`` config keys) become
the experiment's spec (``experiment_config.py``: the kit's ``components/spec/prompted.py``, which `gpulease check`,
`up` and `down` read the stack with too), then the gpulease program declares it. A stack whose file holds a spec of
its own (``gpulease:experiment`` or ``gpulease:sweep``, as `gpulease init` writes it) is declared from that. The
stack's file is named as the Pulumi CLI names it: ``Pulumi.<stack>`` with the project file's extension (``.yml`` in
a ``Pulumi.yml`` project), in the project's ``stackConfigDir`` when it sets one (where the Pulumi CLI reads it)."""

import os
from pathlib import Path

import pulumi

from components.program import main
from gpulease.review.stacks import enclosing_project, project_info, stack_file_name

here = Path.cwd()
project = enclosing_project(here) or here
config_dir = project_info(project)[1]  # stackConfigDir, or the project folder
main(source=os.path.relpath(config_dir / stack_file_name(project, pulumi.get_stack()), here))
