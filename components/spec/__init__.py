"""The stack spec: what a stack may declare, validated before anything is registered.

``load`` (``load_stack_spec``, ``StackSpec``, ``SpecError``) → ``sweep`` (runs over a base) → ``experiment``
(``ExperimentSpec``, checked against its cloud's ``rules``, listed in ``clouds``) → ``sections`` (ssh, data disk,
checkpoints, image, network, watchdog) and ``keys`` (OpenSSH public keys); ``schema`` exports the JSON Schema.
This package imports no Pulumi. Import from its modules (this file imports none, so that a cloud's ``spec.py`` can
use ``rules`` without loading the rest).
"""
