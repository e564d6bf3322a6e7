"""A stack's life from the operator's machine, one command each way: ``init`` (a stack file from a few answers),
``check`` (is this machine and account ready), ``up`` (review, deploy, wait for the instance's own reports) and
``down`` (destroy, saying what stays and what it costs).

``answers`` and ``stackfile`` write the stack file, ``readiness`` and ``quotas`` check, ``deploy`` and
``capacity`` bring a stack up, ``teardown`` takes it down; ``backend`` is the one seam to Pulumi (the
ephemeral stacks' ``StackBackend`` with the policy pack and a config file per update)."""
