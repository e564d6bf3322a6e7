"""budget-tags: every cost traces to an owner and a budget, and the worst case fits the budget.

``budget-tags`` (resource, mandatory): every taggable resource (a type whose SDK takes ``tags``; not an object
in a bucket, whose tags are object tags rather than cost-allocation tags) carries the required tags, in either
tag form (a map, or an autoscaling group's list of ``{key, value, propagateAtLaunch}`` blocks), with valid values: budget a positive number, expires-at RFC 3339 with an offset, owner an email,
max-runtime-hours a positive number within the cap, managed-by ``gpulease``, checkpoint-uri a bucket URI or
``none``.

``budget-worst-case`` (stack, mandatory): the worst-case cost from ``gpulease.core.cost`` (each instance's hourly
cap x its max runtime, plus storage; a group, fleet, node group or pool counted at its max size, in each
resource's region) does not exceed the budget tag. When every budget tag in the stack agrees
(one experiment, or a sweep, whose budget covers all its runs) the whole stack is held to it; when experiments
carry different budgets each is held to its own. It judges only when the instance prices are known; otherwise
``budget-unpriced`` (stack, advisory) says what is unpriced, so an unknown price never blocks a deployment but
is never silent either. Its message names the prices it used, with their dates.

``budget-prices-fresh`` (stack, advisory): the prices behind the estimate are no older than ``maxPriceAgeDays``
(default 30); a stale price is named with its date, so a budget decision is never made on old numbers silently.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

from pulumi_policy import (
    ReportViolation,
    ResourceValidationArgs,
    ResourceValidationPolicy,
    StackValidationArgs,
    StackValidationPolicy,
)

from gpulease.core import resources as rt
from gpulease.core import vocabulary as v
from gpulease.core.catalog.freshness import (
    DEFAULT_MAX_PRICE_AGE_DAYS,
    REFRESH_HINT,
    describe_stale,
    line_prices,
    stale,
)
from gpulease.core.money import usd, usd_per_hour

from . import common as c
from .taggable import is_accountable
from .way_out import what_fits

if TYPE_CHECKING:
    from gpulease.core import cost


def _cost() -> Any:
    """``gpulease.core.cost``, imported when a budget rule first runs: with the catalog it loads (pydantic's
    models), it is most of what the pack would otherwise import before answering the CLI's first request."""
    from gpulease.core import cost

    return cost


def cost_is_compute(type_: str) -> bool:
    """Whether the cost model prices ``type_`` as running instances (``gpulease.core.cost.estimate.is_compute``)."""
    from gpulease.core.cost.estimate import is_compute

    return is_compute(type_)


def _valid(key: str, value: Any) -> str | None:
    """Why a tag value is not acceptable, or None."""
    if key == v.TAG_BUDGET_USD:
        number = rt.number(value)
        if number is None or number <= 0:
            return f"{key}={value!r} is not a positive number of USD, e.g. 40"
    elif key == v.TAG_EXPIRES_AT:
        if c.parse_time(value) is None:
            return f"{key}={value!r} is not an RFC 3339 timestamp with a UTC offset, e.g. 2026-11-30T10:00:00Z"
    elif key == v.TAG_OWNER:
        if not isinstance(value, str) or not v.EMAIL.match(value):
            return f"{key}={value!r} is not an email address, e.g. alice@example.com"
    elif key == v.TAG_MAX_RUNTIME_HOURS:
        number = rt.number(value)
        if number is None or not 0 < number <= v.MAX_RUNTIME_HOURS_CAP:
            return f"{key}={value!r} is not a number of hours in (0, {v.MAX_RUNTIME_HOURS_CAP:g}]"
    elif key == v.TAG_MANAGED_BY:
        if value != v.MANAGED_BY_VALUE:
            return f"{key}={value!r}; accepted: {v.MANAGED_BY_VALUE}"
    elif key == v.TAG_CHECKPOINT_URI:
        if value != v.NO_CHECKPOINTS and c.checkpoint_bucket(value) is None:
            return f"{key}={value!r} is not s3://bucket/prefix, oss://bucket/prefix or {v.NO_CHECKPOINTS!r}"
    elif not isinstance(value, str) or not value.strip():
        return f"{key} is empty"
    return None


def _budget_tags(args: ResourceValidationArgs, report: ReportViolation) -> None:
    if not is_accountable(args.resource_type):
        return
    required = list(c.config_value(args.get_config(), "requiredTags", list(v.REQUIRED_TAGS)))
    tags = c.tags_of(args.props, args.provider)
    what = c.display(args.resource_type, args.name)
    missing = [k for k in required if k not in tags]
    if missing:
        report(f"{what} is missing required tags: {', '.join(missing)}")
    problems = [p for k in required if k in tags and tags[k] is not c.UNKNOWN for p in [_valid(k, tags[k])] if p]
    if problems:
        report(f"{what} has invalid tags: {'; '.join(problems)}")


budget_tags = c.judges(ResourceValidationPolicy(
    name="budget-tags",
    description="Every taggable resource carries the accounting tags (owner, budget, deadline...) with valid values.",
    validate=_budget_tags,
    enforcement_level=c.level("mandatory"),
    config_schema=c.schema(
        {
            "requiredTags": {"type": "array", "items": {"type": "string"}, "default": list(v.REQUIRED_TAGS),
                             "description": "Tag keys every taggable resource must carry."},
        }
    ),
), is_accountable)


# --- stack level: the worst case against the budget -------------------------------------------------------


def _known_or_none(value: Any) -> Any:
    """Plain data (``common.plain``'s) with every ``UNKNOWN`` as None."""
    kind = type(value)  # the exact types plain data is made of first: an ABC check per value costs more
    if kind is dict:
        return {k: _known_or_none(x) for k, x in value.items()}
    if kind is str or kind is float or kind is bool or kind is int:
        return value
    if isinstance(value, Mapping):
        return {k: _known_or_none(x) for k, x in value.items()}
    if isinstance(value, list):
        return [_known_or_none(x) for x in value]
    return None if value is c.UNKNOWN else value


def _region_of(r: Any) -> str | None:
    region = c.known(r.provider.props, "region") if r.provider is not None else None
    return region if isinstance(region, str) and region else None


def is_default_provider(name: str) -> bool:
    """A default provider's name: ``default`` offline, ``default_<version>`` (``default_6_50_0``) as the engine
    names the provider it creates from the stack config."""
    return name == "default" or name.startswith("default_")


def _explicit(r: Any) -> bool:
    return r.provider is not None and not is_default_provider(str(getattr(r.provider, "name", "")))


def _region(resources: list) -> dict[str, str]:
    """Each cloud's region in the stack: its default provider's (the stack config's ``aws:region`` /
    ``alicloud:region``); a stack may use both clouds. An explicit provider's region is its own resources' only."""
    found: dict[str, str] = {}
    for r in resources:
        region = _region_of(r)
        cloud = getattr(r.provider, "resource_type", "").removeprefix("pulumi:providers:")
        if region is None or cloud not in ("aws", "alicloud") or _explicit(r):
            continue
        found.setdefault(cloud, region)
    return found


def reads_for_cost(type_: str) -> bool:
    """Every type: the cost model (``gpulease.core.cost.estimate_resources``) reads every resource it is handed.
    It prices compute forms through their templates, resizes a group by the scheduled actions that set its size
    (``gpulease.core.compute.units.RESIZERS``), counts a schedule or command that launches instances and the
    templates a CloudFormation stack runs, lists every type it does not know to be free as unpriced, and reads any
    resource's tags (an experiment's runtime) and inputs (the region they name). A narrower filter would hide some
    of them from the budget rules at ``gpulease plan`` and ``pulumi up`` while the SDK's own servicer shows them:
    a scheduled scale-up to 100 instances would be invisible to the worst case."""
    return bool(type_)


def estimate_stack(resources: list) -> cost.StackCost:
    """The cost model's ``StackCost`` for the stack's resources, each in its provider's region: once per request for
    the same resources (the three budget rules read the same types, ``reads_for_cost``)."""
    return c.memoized("estimate_stack", resources, lambda: _estimate_stack(resources))


def _estimate_stack(resources: list) -> cost.StackCost:
    plain = [
        (r.resource_type, _known_or_none(c.registered(r).props), {  # the conversion every rule shares
            "name": r.name, "urn": r.urn, "region": _region_of(r), "explicitProvider": _explicit(r),
            "dependencies": {k: [d.urn for d in deps] for k, deps in (r.property_dependencies or {}).items()},
        })
        for r in resources
    ]
    return _cost().estimate_resources(plain, region=_region(resources) or None)


def unpriced_instances(estimate: Any, experiment: str, resources: list | None = None) -> list[str]:
    """An experiment's instance lines whose hourly cap or runtime is unknown (so its worst case is no bound).

    Disks and addresses of the same resource have their own lines and do not make the compute unpriced."""
    return [
        line.item
        for line in estimate.lines
        if line.experiment == experiment and line.compute
        and (line.max_hourly_usd is None or line.runtime_hours is None)
    ]


def prices_used(estimate: Any, experiments: set[str]) -> str:
    """``prices used: g5.xlarge on-demand (2025-06-01); storage and addresses (2025-06-01); shipped catalog of ...``"""
    lines = [line for line in estimate.lines if line.experiment in experiments and line.price_as_of]
    # An instance's own line reads "<type> spot ..." or "<type> on-demand"; its disks and address have their own.
    compute = [line for line in lines if line.compute]
    regions = {line.region or estimate.region for line in lines}
    several = len(regions) > 1  # a stack on both clouds: each price named with its own region
    parts = []
    for line in compute:
        cap = f", cap {line.cap_as_of}" if line.cap_as_of else ""
        parts.append(f"{line.item}{f' in {line.region}' if several else ''} ({line.price_as_of}{cap})")
    rest = sorted({line.price_as_of for line in lines if line not in compute})
    if rest:
        parts.append(f"storage and addresses ({', '.join(rest)})")
    where = f" in {estimate.region}" if estimate.region and not several else ""
    return f"prices used{where}: {'; '.join(parts) or 'none'}; {estimate.price_catalog}"


def _budgeted(estimate: Any) -> list[Any]:
    return [e for e in estimate.experiments if e.budget_usd is not None]


def _budget_worst_case(args: StackValidationArgs, report: ReportViolation) -> None:
    margin = float(c.config_value(args.get_config(), "headroomPercent", 0))
    estimate = estimate_stack(args.resources)
    budgeted = _budgeted(estimate)
    if not budgeted:
        return
    shared = {exp.budget_usd for exp in budgeted}
    if len(shared) == 1:
        # One budget for the stack (a sweep shares its budget): everything it runs must fit in it.
        if any(unpriced_instances(estimate, exp.name, args.resources) for exp in budgeted):
            return  # budget-unpriced reports it
        budget = shared.pop()
        limit = budget * (1 - margin / 100)
        if estimate.worst_case_usd > limit:
            names = ", ".join(repr(exp.name) for exp in budgeted)
            report(f"worst-case cost {usd(estimate.worst_case_usd)} of {names} ({usd_per_hour(estimate.max_hourly_usd)} "
                   f"until each deadline, storage included) exceeds budgetUsd {usd(budget)} (the {v.TAG_BUDGET_USD} tag)"
                   + (f" less {margin:g}% headroom" if margin else "")
                   + what_fits(budget, limit, estimate.worst_case_usd, margin, estimate.lines)
                   + " (" + prices_used(estimate, {exp.name for exp in estimate.experiments}) + ")")
        return
    for exp in budgeted:
        if unpriced_instances(estimate, exp.name, args.resources):
            continue  # budget-unpriced reports it
        limit = exp.budget_usd * (1 - margin / 100)
        if exp.worst_case_usd > limit:
            anchor = next(
                (r.urn for r in args.resources if cost_is_compute(r.resource_type)
                 and c.tags_of(r.props, r.provider).get(v.TAG_EXPERIMENT) == exp.name),
                None,
            )
            runtime = f"{exp.runtime_hours:g} h" if exp.runtime_hours else "its max runtime"
            report(f"experiment {exp.name!r}: worst-case cost {usd(exp.worst_case_usd)} ({usd_per_hour(exp.max_hourly_usd)} "
                   f"for {runtime}, storage included) exceeds its budgetUsd {usd(exp.budget_usd)} (the {v.TAG_BUDGET_USD} tag)"
                   + (f" less {margin:g}% headroom" if margin else "")
                   + what_fits(exp.budget_usd, limit, exp.worst_case_usd, margin,
                               [line for line in estimate.lines if line.experiment == exp.name])
                   + " (" + prices_used(estimate, {exp.name, _cost().SHARED}) + ")", anchor)


def _budget_unpriced(args: StackValidationArgs, report: ReportViolation) -> None:
    accepted = set(c.config_value(args.get_config(), "acceptUnpriced", []))
    budgeted = [r for r in args.resources if cost_is_compute(r.resource_type)
                and c.tags_of(r.props, r.provider).get(v.TAG_BUDGET_USD) is not None]
    if not budgeted:
        return
    estimate = estimate_stack(args.resources)
    for exp in _budgeted(estimate):
        missing = [m for m in unpriced_instances(estimate, exp.name)
                   if not set(m.split(" ")[0].split("/")) <= accepted]
        if missing:
            types = [t for m in missing for t in m.split(" ")[0].split("/")]
            gaps = [u for u in estimate.unknown_prices if any(t in u for t in types) or "runtime" in u]
            report(f"experiment {exp.name!r}: the worst case cannot be checked against its budget of "
                   f"{usd(exp.budget_usd)}; no price or runtime for: {', '.join(gaps or missing)}")


def _budget_prices_fresh(args: StackValidationArgs, report: ReportViolation) -> None:
    max_age = float(c.config_value(args.get_config(), "maxPriceAgeDays", DEFAULT_MAX_PRICE_AGE_DAYS))
    estimate = estimate_stack(args.resources)
    now = c.now()
    old = stale(line_prices(estimate.lines, estimate.region), now, max_age)
    if old:
        report(f"the cost estimate and the budget check used prices {describe_stale(old, now, max_age)} "
               f"({estimate.price_catalog}); {REFRESH_HINT}")


budget_worst_case = c.judges(StackValidationPolicy(
    name="budget-worst-case",
    description="Each experiment's worst-case cost (price x max runtime + storage) fits its budget tag.",
    validate=_budget_worst_case,
    enforcement_level=c.level("mandatory"),
    config_schema=c.schema(
        {
            "headroomPercent": {"type": "number", "minimum": 0, "maximum": 100, "default": 0,
                                "description": "Keep this share of the budget unspent in the worst case."},
        }
    ),
), reads_for_cost)

budget_unpriced = c.judges(StackValidationPolicy(
    name="budget-unpriced",
    description="An experiment whose worst-case cost cannot be priced is flagged for review.",
    validate=_budget_unpriced,
    enforcement_level=c.level("advisory"),
    config_schema=c.schema(
        {
            "acceptUnpriced": {"type": "array", "items": {"type": "string"}, "default": [],
                               "description": "Instance types accepted without a catalog price."},
        }
    ),
), reads_for_cost)

budget_prices_fresh = c.judges(StackValidationPolicy(
    name="budget-prices-fresh",
    description="The prices behind the cost estimate and the budget check are recent enough to decide on.",
    validate=_budget_prices_fresh,
    enforcement_level=c.level("advisory"),
    config_schema=c.schema(
        {
            "maxPriceAgeDays": {"type": "number", "minimum": 0, "default": DEFAULT_MAX_PRICE_AGE_DAYS,
                                "description": "Flag a price older than this many days."},
        }
    ),
), reads_for_cost)

POLICIES = [budget_tags, budget_worst_case, budget_unpriced, budget_prices_fresh]
