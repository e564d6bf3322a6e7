"""The cloud-neutral model: vocabulary, resource types and tag values, catalog, sizing, cost, clock, errors.

Nothing here imports Pulumi or ``components``: the policy pack, the reaper, the CLI and the program all build on it.
"""
