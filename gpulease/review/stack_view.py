"""The ``AnalyzeStack`` request of the offline review, as views the servicer reads instead of protobuf messages.

Building an ``AnalyzerResource`` message copies the resource's properties ``Struct`` (user-data included) into the
request: measured with ``bench/plan_bench.py --profile``, that copy was about a fifth of judging a 10-run sweep.
A view holds the captured wire ``Struct`` itself and answers the fields the servicer (ours and pulumi-policy
1.21.0's ``_PolicyAnalyzerServicer.AnalyzeStack``, ``_get_resource_options``, ``_get_provider_resource``) reads:
``type``, ``properties``, ``urn``, ``name``, ``options``, ``provider`` (and ``HasField("provider")``), ``parent``,
``dependencies``, ``propertyDependencies``. ``policy_runner._stack_resource`` still builds the message (the bench
and the publishable-pack test send it over gRPC); ``tests/review/test_stack_view.py`` checks both give the same
verdicts and read the same fields.
"""

from __future__ import annotations

from typing import Any, NamedTuple

from pulumi.runtime.proto import analyzer_pb2


class StackResource:
    """An ``AnalyzerResource`` as the servicer reads it, over a captured resource (see the module docstring)."""

    __slots__ = (
        "dependencies",
        "name",
        "options",
        "parent",
        "properties",
        "propertyDependencies",
        "provider",
        "type",
        "urn",
    )

    def __init__(self, res: Any, properties: Any, options: Any, provider: Any) -> None:
        self.type, self.urn, self.name = res.type, res.urn, res.name
        self.properties, self.options, self.provider = properties, options, provider
        self.parent = res.parent or ""  # protobuf's default for an unset string
        self.dependencies = list(res.dependencies)
        self.propertyDependencies = {
            k: analyzer_pb2.AnalyzerPropertyDependencies(urns=urns) for k, urns in res.property_dependencies.items()
        }

    def HasField(self, name: str) -> bool:  # noqa: N802 (protobuf's name)
        """Whether a message field is set, as protobuf answers it (an unknown name is an error there too)."""
        if name not in ("options", "provider", "properties"):
            raise ValueError(f'Protocol message AnalyzerResource has no non-repeated submessage field "{name}"')
        return getattr(self, name) is not None


class StackRequest(NamedTuple):
    """What the servicer reads of an ``AnalyzeStackRequest``: its ``resources``."""

    resources: list[StackResource]
