"""The one registry the review's mocks read: lookup answers, resource answers and component models.

Each cloud's answers (``mocks_aws``, ``lookups_aws``, ``mocks_alicloud``, ...) and each component model
(``gpulease.review.models``) registers into the tables here; ``mocks.py`` reads them. The answers depend on this
module and on ``mock_ids`` only, never on ``mocks.py``: the arrows point one way, and adding an answer table or a
model is one file.

A handler is typed against ``MockState`` (what the mocks carry that an answer may read), not the mocks class.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass
from datetime import datetime
from typing import Any, Protocol

from pulumi.runtime import rpc


class MockState(Protocol):
    """What an answer may read of the mocks answering it."""

    region: str
    region_given: bool
    """False when the stack configures no region: ``region`` then only seeds ids, and answers name no region."""
    existing_volumes: dict[str, str]
    now: datetime | None
    instances: list[str]
    ready: bool
    objects: list[str]

    def arn(self, service: str, resource: str, region: bool = True, account: bool = True) -> str: ...


CallHandler = Callable[[MockState, dict], dict]
"""A lookup's answer: (mocks, the lookup's arguments in engine names) -> the result, in the provider's shape."""
ResourceHandler = Callable[[MockState, str, dict], tuple[str, dict]]
"""A resource's answer: (mocks, name, inputs) -> (its id, the outputs it adds to its inputs)."""

CALLS: dict[str, CallHandler] = {}
RESOURCES: dict[str, ResourceHandler] = {}


def register_answers(calls: Mapping[str, CallHandler] | None = None,
                     resources: Mapping[str, ResourceHandler] | None = None) -> None:
    """Add a table of lookup answers and resource answers; a token answered twice is a programming error."""
    for table, new in ((CALLS, calls or {}), (RESOURCES, resources or {})):
        clash = sorted(set(table) & set(new))
        if clash:
            raise ValueError(f"answered twice: {', '.join(clash)}")
        table.update(new)


# --- component models ------------------------------------------------------------------------------------------


class ComponentBuild(Protocol):
    """What a component model is handed: the component's name and inputs, and a way to register its children."""

    name: str
    inputs: dict[str, Any]
    """The component's inputs in engine names (camelCase), resources as their ids (components: their URNs),
    unknowns as ``rpc.UNKNOWN``."""
    region: str

    def child(self, type_: str, name: str, inputs: dict[str, Any], *,
              depends: Mapping[str, list[Child | str]] | None = None,
              ignore_changes: list[str] | None = None) -> Child:
        """Register a child of the component (parent: the component) and return what the mocks answered;
        ``depends`` names, per input, the children (or URNs, ``input_dependencies``) its value comes from (the
        engine's property dependencies)."""
        ...

    def input_dependencies(self, key: str) -> list[str]:
        """The URNs the component's input ``key`` depends on (a launch template the program passes in), so a child
        taking that input keeps the dependency as the component's code does when it passes the output on."""
        ...

    def outputs_of(self, urn: str) -> dict[str, Any]:
        """The outputs of a resource registered before (a component given as an input), or ``{}``."""
        ...


@dataclass(frozen=True)
class Child:
    """A registered child: its URN, id and outputs (inputs and the mocks' additions), and a reference to it as the
    component's outputs carry resources."""

    urn: str
    id: str
    type: str
    outputs: dict[str, Any]

    def ref(self) -> dict[str, Any]:
        return {rpc._special_sig_key: rpc._special_resource_sig, "urn": self.urn, "id": self.id}


ModelFunction = Callable[[ComponentBuild], dict[str, Any]]
"""A model: registers the children the component creates under a real engine and returns the component's outputs
(engine names, the SDK's output types: strings, lists of ids, resource references via ``Child.ref``)."""


@dataclass(frozen=True)
class ComponentModel:
    token: str
    """The component's type token (``eks:index:Cluster``)."""
    build: ModelFunction
    source: str
    """Where the children and their input shapes were read (the component's source file)."""


COMPONENTS: dict[str, ComponentModel] = {}


def register_model(model: ComponentModel) -> ComponentModel:
    if model.token in COMPONENTS:
        raise ValueError(f"modelled twice: {model.token}")
    COMPONENTS[model.token] = model
    return model
