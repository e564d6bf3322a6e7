"""A stack's compute units: each resource of a compute form with what it runs, resolved through its templates.

An autoscaling group usually names its instance type, market and disks only through a launch template; an ESS
scaling group through the scaling configurations that name it. ``compute_units`` joins them: a template belongs
to a form when the form's reference input depends on the template resource (the engine's property
dependencies) or names one of its identities (id, name, ARN) by value.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from gpulease.core import resources as rt
from gpulease.core.compute import (  # noqa: F401 - they register the forms
    alicloud_container_forms,
    alicloud_forms,
    aws_forms,
    aws_ml_forms,
    aws_native_forms,
    kubernetes_forms,
    requirements,
)
from gpulease.core.compute.accelerators import is_accelerated_family
from gpulease.core.compute.cloudformation import STACK, template_resources
from gpulease.core.compute.forms import COMPUTE, ON_DEMAND, TEMPLATE, ComputeForm, Market, form_of
from gpulease.core.compute.paths import UNKNOWN, Uncountable, count, number, read, read_all


@dataclass
class Registered:
    """One registered resource as the readers see it: plain inputs (``UNKNOWN`` where not known yet)."""

    type: str
    name: str
    urn: str
    props: Mapping[str, Any]
    dependencies: Mapping[str, Sequence[str]] = field(default_factory=dict)
    """Per top-level input, the URNs of the resources it depends on."""
    default_tags: Mapping[str, Any] = field(default_factory=dict)
    """Tags its provider adds (AWS ``default_tags``)."""
    host: str = ""
    """For a resource a CloudFormation stack's template creates: the stack's URN (what findings name)."""
    choices: Mapping[str, Sequence[Any]] = field(default_factory=dict)
    """For a template's resource: per dotted input path, the values an intrinsic there may take."""
    opaque: frozenset[str] = frozenset()
    """For a template's resource: the dotted input paths whose intrinsic the pack never sees resolved."""

    @property
    def form(self) -> ComputeForm | None:
        return form_of(self.type)

    def tags(self) -> dict[str, Any]:
        form = self.form
        key = form.tags if form is not None else "tags"
        own = rt.tag_map(key(self.props) if callable(key) else read(self.props, key)) if key else {}
        return {**self.default_tags, **own}

    def identities(self) -> set[str]:
        keys = self.form.identity if self.form is not None else ("id",)
        return {value for key in (*keys, "id") if isinstance(value := read(self.props, key), str) and value}


def refers(holder: Registered, value: Any, dependency: str, target: Registered) -> bool:
    """Whether ``holder``'s input ``dependency`` (whose value at the reference is ``value``) names ``target``."""
    if target.urn in holder.dependencies.get(dependency, ()):
        return True
    return isinstance(value, str) and value in target.identities()


def _flatten(values: Iterable[Any]) -> list[Any]:
    out: list[Any] = []
    for value in values:
        if isinstance(value, list | tuple):
            out.extend(value)
        else:
            out.append(value)
    return out


@dataclass
class ComputeUnit:
    """One compute-form resource, resolved."""

    resource: Registered
    form: ComputeForm
    templates: list[Registered]
    types: list[str]
    """The instance types it may launch (known ones)."""
    types_unknown: bool
    """Some type is not known during preview, or comes from a template outside the stack."""
    capacity: Any
    """The most instances at once: a number, or ``UNKNOWN``."""
    desired: Any
    market: Market
    tags: dict[str, Any]
    types_opaque: bool = False
    """Some type is a CloudFormation intrinsic the pack cannot resolve: not known even when the stack runs."""
    templates_named: list[Any] = field(default_factory=list)
    """The values by which it names templates that are not in the stack (an id, a name; ``UNKNOWN`` while not
    known during preview)."""

    @property
    def accelerated_types(self) -> list[str]:
        return [t for t in self.types if is_accelerated_family(t)]

    @property
    def accelerator_request(self) -> str | None:
        """What asks for GPUs besides the types (an ECI container's ``gpu``, a NodePool's GPU limit)."""
        sources = [(self.form, self.resource.props), *((t.form, t.props) for t in self.templates if t.form is not None)]
        return next((hint for form, props in sources
                     if (hint := form.accelerator(props) or requirements.accelerator_request(props))), None)

    @property
    def open_selection(self) -> str | None:
        """Why its attribute-based type selection may launch accelerated types it does not ask for."""
        sources = [self.resource.props, *(t.props for t in self.templates)]
        return next((why for props in sources if (why := requirements.open_selection(props))), None)

    @property
    def accelerated(self) -> bool:
        return bool(self.accelerated_types) or self.accelerator_request is not None

    @property
    def references_template(self) -> bool:
        return bool(self.templates) or any(self._named(ref.path) for ref in self.form.templates)

    def _named(self, path: str) -> bool:
        return bool(read_all(self.resource.props, path))

    def describe_types(self) -> str:
        shown = self.accelerated_types or self.types
        return ", ".join(dict.fromkeys(shown)) or self.accelerator_request or "type not known"


def templates_of(res: Registered, resources: Sequence[Registered]) -> tuple[list[Registered], bool]:
    """The templates ``res`` launches from, and whether it names one that is not in the stack."""
    found, absent = _templates(res, resources)
    return found, bool(absent)


def _templates(res: Registered, resources: Sequence[Registered]) -> tuple[list[Registered], list[Any]]:
    """The templates ``res`` launches from, and the values naming templates not in the stack."""
    form = res.form
    if form is None:
        return [], []
    found: list[Registered] = []
    absent: list[Any] = []
    for ref in form.templates:
        for named in read_all(res.props, ref.path):
            if named is UNKNOWN:
                value: Any = UNKNOWN
            elif ref.id_key is None and ref.name_key is None:
                value = named
            else:
                value = next((x for key in (ref.id_key, ref.name_key) if key
                              and (x := read(named, key)) is not None), None)
            hits = [t for t in resources if t.type in ref.tokens and refers(res, value, ref.dependency, t)]
            found += [t for t in hits if t not in found]
            if not hits:
                absent.append(value)
        if not read_all(res.props, ref.path):
            # A plain reference to an output not known during preview (``launch_configuration=config.name``) is
            # absent from the inputs; the engine's property dependencies still name the template.
            named = set(res.dependencies.get(ref.dependency, ()))
            found += [t for t in resources if t.type in ref.tokens and t.urn in named and t not in found]
    for attached in form.attached:
        for t in resources:
            if t.type == attached.token and t not in found and refers(t, read(t.props, attached.link), attached.link, res):
                found.append(t)
    return found, absent


def _types(form: ComputeForm, props: Mapping[str, Any]) -> list[Any]:
    if form.type_reader is not None:
        return form.type_reader(props)
    return _flatten(value for path in form.instance_types for value in read_all(props, path))


def _matches(pattern: str, path: str) -> bool:
    """Whether a dotted input path (list indices as numbers) is one a form's ``*`` path reaches."""
    want, got = pattern.split("."), path.split(".")
    if len(got) == len(want) + 1 and got[-1].isdigit():
        got = got[:-1]  # one element of a list of types (``instanceTypes: [!Ref NodeType]``)
    return len(want) == len(got) and all(w == g or (w == "*" and g.isdigit()) for w, g in zip(want, got, strict=True))


def _resolved_types(res: Registered) -> tuple[list[Any], bool]:
    """``res``'s instance types with a template intrinsic's possible values in place of ``UNKNOWN``, and whether
    one of them is an intrinsic the pack cannot resolve."""
    form = res.form
    assert form is not None
    raw = _types(form, res.props)
    if not res.host or form.type_reader is not None:
        return raw, False
    paths = form.instance_types
    chosen = [v for where, values in res.choices.items() if any(_matches(p, where) for p in paths)
              for v in _flatten(values)]
    opaque = any(_matches(p, where) for where in res.opaque for p in paths)
    if chosen or opaque:
        raw = [t for t in raw if t is not UNKNOWN] + chosen + ([UNKNOWN] if opaque else [])
    return raw, opaque


def _capacity(form: ComputeForm, props: Mapping[str, Any]) -> Any:
    capacity = form.capacity(props)
    if capacity is None:
        return 1
    if capacity is UNKNOWN or isinstance(capacity, Uncountable) or not form.weights:
        return capacity
    weights = [w for path in form.weights for w in (number(x) for x in read_all(props, path)) if w not in (None, UNKNOWN)]
    smallest = min((w for w in weights if w > 0), default=1.0)
    # Capacity counts units when types carry weights; the most instances run when the lightest type fills it.
    return float(math.ceil(capacity / smallest)) if smallest < 1 else capacity


SCHEDULED_SIZES = {
    "asg-schedule": (rt.AWS_AUTOSCALING_SCHEDULE, ("maxSize", "desiredCapacity", "minSize")),
    "ess-task": (rt.ALI_SCHEDULED_TASK, ("maxValue", "desiredCapacity", "minValue")),
}
"""Per deadline kind, the scheduled action of the stack that resizes the group, and its size inputs."""
RESIZERS = frozenset(token for token, _ in SCHEDULED_SIZES.values())
"""Types ``compute_units`` reads besides the forms: a group's worst case runs at the largest size they set."""


def _scheduled_size(res: Registered, resources: Sequence[Registered]) -> Any:
    """The largest size a scheduled action of the stack gives ``res`` (``UNKNOWN`` when one is not known; None
    when none resizes it): the group's worst case runs at it, whatever its own max size says."""
    form = res.form
    assert form is not None
    largest: Any = None
    for deadline in form.deadlines:
        if deadline.kind not in SCHEDULED_SIZES:
            continue
        token, keys = SCHEDULED_SIZES[deadline.kind]
        for action in resources:
            if action.type != token or not refers(action, read(action.props, deadline.link), deadline.link, res):
                continue
            for key in keys:
                size = count(action.props, key)
                if size is UNKNOWN:
                    return UNKNOWN
                if isinstance(size, Uncountable):
                    return Uncountable(f"{action.name}.{key}", size.value)
                if isinstance(size, float) and (largest is None or size > largest):
                    largest = size
    return largest


def unit_of(res: Registered, resources: Sequence[Registered]) -> ComputeUnit | None:
    """``res`` as a compute unit; None when it is not a compute form."""
    form = res.form
    if form is None or form.role != COMPUTE:
        return None
    templates, absent = _templates(res, resources)
    missing = bool(absent)
    raw, opaque = _resolved_types(res)
    if not raw:
        for tpl in templates:
            if tpl.form is not None:
                found, hidden = _resolved_types(tpl)
                raw += found
                opaque = opaque or hidden
        if not raw and not templates and not missing:
            raw = list(form.default_types)
    types = [t for t in raw if isinstance(t, str) and t]
    market = form.market(res.props)
    for tpl in templates:
        if market.kind is not None:
            break
        if tpl.form is not None:
            market = tpl.form.market(tpl.props)
    if market.kind is None:
        market = Market(ON_DEMAND, "no market option (on-demand, both clouds' default)")
    tags: dict[str, Any] = {}
    for tpl in templates:
        if tpl.form is not None and tpl.form.instance_tags is not None:
            tags.update(tpl.form.instance_tags(tpl.props))
    tags.update(res.tags())
    desired = form.desired(res.props)
    capacity = _capacity(form, res.props)
    scheduled = _scheduled_size(res, resources)
    if scheduled is UNKNOWN or isinstance(scheduled, Uncountable):
        capacity = scheduled
    elif scheduled is not None and isinstance(own := form.capacity(res.props), float) and scheduled > own:
        capacity = _capacity(form, {**res.props, "maxSize": scheduled})
    if form.capacity_from_templates:
        sizes = [_capacity(t.form, t.props) for t in templates if t.form is not None]
        known = [s for s in sizes if isinstance(s, int | float)]
        bad = next((s for s in sizes if isinstance(s, Uncountable)), None)
        capacity = bad or (sum(known) if sizes and len(known) == len(sizes) else UNKNOWN)
        desired = None
    if isinstance(desired, Uncountable) and not isinstance(capacity, Uncountable):
        capacity = desired  # a desired size the provider refuses: the size is unknown, never the max alone
    return ComputeUnit(
        resource=res, form=form, templates=templates, types=types,
        types_unknown=missing or any(t is UNKNOWN for t in raw), types_opaque=opaque, templates_named=absent, capacity=capacity,
        desired=desired, market=market, tags=tags,
    )


def embedded(stack: Registered) -> list[Registered]:
    """What a CloudFormation stack's template creates, as registered resources hosted by the stack (none when
    the template cannot be read: the unjudged rule reports that). CloudFormation propagates the stack's tags to
    the resources it creates (CreateStack ``Tags``, https://docs.aws.amazon.com/AWSCloudFormation/latest/APIReference/
    API_CreateStack.html), so they count as the resources' default tags."""
    found = template_resources(stack.props, stack.urn)
    if not isinstance(found, list):
        return []
    tags = {**stack.default_tags, **rt.tag_map(read(stack.props, "tags"))}
    # A value the body interpolates from another resource (a launch configuration's id) is one of the body's
    # property dependencies: each input of an embedded resource depends on what the body depends on.
    body_deps = list(stack.dependencies.get("templateBody", ()))
    return [Registered(type=e.token, name=f"{stack.name}/{e.logical_id}", urn=f"{stack.urn}/{e.logical_id}",
                       props=e.props, dependencies={k: body_deps for k in e.props} if body_deps else {},
                       default_tags=tags, host=stack.urn, choices=e.choices, opaque=e.opaque) for e in found]


def expand(resources: Sequence[Registered]) -> list[Registered]:
    """``resources`` with what their CloudFormation stacks create next to each stack."""
    out: list[Registered] = []
    for res in resources:
        out.append(res)
        if res.type == STACK:
            out += embedded(res)
    return out


def compute_units(resources: Sequence[Registered]) -> list[ComputeUnit]:
    """Every compute-form resource of the stack, resolved through its templates, in registration order; the
    compute a CloudFormation stack's template creates included (its ``host`` is the stack)."""
    resources = expand(resources)
    return [unit for res in resources if (unit := unit_of(res, resources)) is not None]


def is_template(type_: str) -> bool:
    form = form_of(type_)
    return form is not None and form.role == TEMPLATE
