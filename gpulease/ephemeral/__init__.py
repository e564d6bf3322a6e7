"""Ephemeral training stacks for CI: create a uniquely named stack from a base stack, train, collect the
artifacts, and always tear the stack down.

- ``backend``: the one interface over the Pulumi Automation API (``StackBackend``) and its real implementation.
- ``channel``: how the runner talks to the instance (``InstanceChannel``) through the checkpoint bucket.
- ``config``: the ephemeral stack's config, derived from the base stack and validated before anything exists.
- ``naming``: unique stack names from the CI run.
- ``preflight``: Pulumi CLI and cloud credential checks.
- ``orchestrator``: run / up / down / ls / gc.
- ``progress``: live progress (rich in a terminal, plain lines in CI) and the final summary.
"""
