"""What every rule needs: unknown-safe property access, tags, ports, time (type tokens: ``gpulease.core.resources``).

Properties reach a rule through ``pulumi_policy``'s unknown-checking proxy: reading a value that is not known
during ``pulumi preview`` raises ``UnknownValueError`` and the whole rule is reported as "can't run during
preview". ``known`` and ``tags_of`` catch that for single values so a rule can judge what is known and skip
only what is not.
"""

from __future__ import annotations

import ipaddress
import re
import threading
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from contextlib import contextmanager
from datetime import datetime
from typing import Any

from pulumi_policy import EnforcementLevel, PolicyConfigSchema
from pulumi_policy import proxy as _proxy
from pulumi_policy.proxy import UnknownValueError

try:  # the proxies' own types: a faster ``plain``; any other pulumi-policy takes the general path
    from pulumi_policy.proxy import _DictProxy, _is_unknown, _ListProxy
except ImportError:  # pragma: no cover - a pulumi-policy without them
    _DictProxy = _ListProxy = None  # type: ignore[assignment,misc]

from gpulease.core import clock
from gpulease.core import resources as rt
from gpulease.core import vocabulary as v
from gpulease.core.compute import FORMS, UNKNOWN, ComputeUnit, Registered, compute_units, form_of
from gpulease.core.compute.cloudformation import STACK as CLOUDFORMATION_STACK
from gpulease.core.compute.units import RESIZERS

__all__ = ["UNKNOWN"]


def level(name: str) -> EnforcementLevel:
    return EnforcementLevel(name)


def judges(policy: Any, types: Iterable[str] | Callable[[str], bool]) -> Any:
    """Declare the resource types a rule reads (its own type checks stay the authority).

    ``gpulease plan`` hands a resource rule only resources of these types, and a stack rule a stack of only
    these types, which spares the analyzer from deserializing every resource once per rule; under
    ``pulumi preview`` every rule sees everything and skips the other types itself, with the same verdicts."""
    policy.resource_types = types if callable(types) else frozenset(types)
    _refuse_unknown_config(policy)
    return policy


def _refuse_unknown_config(policy: Any) -> None:
    """Report a misspelt config key (``requiredTag``) as a violation of the rule it was meant for.

    The Pulumi CLI checks a rule's config against the schema the pack declares, but ``PolicyConfigSchema`` carries
    only ``properties`` and ``required`` (pulumi-policy 1.21: no ``additionalProperties``), so an unknown key would
    be accepted and silently ignored, leaving the rule at its default. The key reaches the rule in ``get_config()``
    (the analyzer's ``Configure`` keeps every property it is sent), so the rule says so itself, once per analyzer
    process (one ``pulumi preview``), at its own enforcement level. ``gpulease plan`` refuses such a config before
    any rule runs (exit 2)."""
    accepted = set((policy.config_schema.properties or {}) if policy.config_schema else ()) | {"enforcementLevel"}
    validate = policy.validate
    told: list[bool] = []

    def checked(args: Any, report: Callable[..., Any]) -> Any:
        unknown = sorted(set(args.get_config() or ()) - accepted)
        if unknown and not told:
            told.append(True)
            report(f"policy config of {policy.name}: unknown key{'s' if len(unknown) > 1 else ''} "
                   f"{', '.join(map(repr, unknown))} (ignored); accepted: {', '.join(sorted(accepted))}")
        return validate(args, report)

    policy.validate = checked


def schema(properties: dict[str, dict[str, Any]]) -> PolicyConfigSchema:
    """A config schema; every property carries a ``default`` so the docs and the engine agree on it."""
    return PolicyConfigSchema(properties=properties)


def config_value(config: Mapping[str, Any], key: str, default: Any) -> Any:
    """A policy config value; the engine fills schema defaults, direct callers may pass nothing."""
    value = config.get(key) if config else None
    return default if value is None else value


ROOT_STACK = "pulumi:pulumi:Stack$"
ACCEPT_FORMS = ("each the resource's full URN, or its URN's tail '<type token>::<name>' (for a resource inside a "
                "component, the tail names the parent types too: '<component type>$<type token>::<name>')")
"""How every accept list (``acceptUnjudged``, ``acceptUnbounded``, ``acceptPublic`` ...) names a resource."""


def urn_tail(urn: str) -> str:
    """``<qualified type>::<name>`` of a URN (``urn:pulumi:dev::proj::my:C$aws:ec2/instance:Instance::gpu`` ->
    ``my:C$aws:ec2/instance:Instance::gpu``); a root stack parent, which the engine leaves out of top-level URNs,
    is dropped."""
    parts = urn.split("::", 3)
    if len(parts) < 4:
        return urn
    return f"{parts[2].removeprefix(ROOT_STACK)}::{parts[3]}"


def listed(config: Mapping[str, Any], key: str, *urns: str) -> bool:
    """Whether the accept list ``key`` names one of ``urns``: by the full URN or its exact tail
    (``urn_tail``); a bare name matches nothing, nor does a same-named resource under another parent."""
    names = config_value(config, key, [])
    entries = {n for n in names if isinstance(n, str)} if isinstance(names, list) else set()
    return any(urn in entries or urn_tail(urn) in entries for urn in urns)


def known(props: Any, *path: str | int, default: Any = None) -> Any:
    """``props[path...]``; ``default`` when absent, ``UNKNOWN`` when not known during preview."""
    value = props
    try:
        for key in path:
            if isinstance(key, int):
                if not isinstance(value, Sequence) or isinstance(value, str) or key >= len(value):
                    return default
                value = value[key]
            else:
                if not isinstance(value, Mapping) or key not in value:
                    return default
                value = value[key]
    except UnknownValueError:
        return UNKNOWN
    return default if value is None else value


def items(props: Any, *path: str) -> list[Any]:
    """A list property as a list of elements (``UNKNOWN`` elements kept as such); [] when absent or unknown."""
    value = known(props, *path, default=[])
    if value is UNKNOWN or not isinstance(value, Sequence) or isinstance(value, str):
        return []
    return [known(value, i) for i in range(len(value))]


def default_tags(provider: Any) -> dict[str, Any]:
    """The tags an AWS provider adds to every resource (``default_tags``); {} for any other provider. Read once per
    provider and request (every resource of a stack names one of a few providers); the caller gets its own copy."""
    if provider is None or getattr(provider, "resource_type", "") != "pulumi:providers:aws":
        return {}
    return dict(memoized("default_tags", (provider,), lambda: _default_tags(provider)))


def _default_tags(provider: Any) -> dict[str, Any]:
    defaults = known(provider.props, "defaultTags", "tags", default={})
    return {k: known(defaults, k) for k in defaults} if isinstance(defaults, Mapping) else {}


def tags_of(props: Any, provider: Any = None, key: str = "tags") -> dict[str, Any]:
    """A resource's tags, over its AWS provider's ``default_tags`` when the provider is known; a value not known
    during preview is ``UNKNOWN``; no tags at all is {}. Both tag forms are read: a map, or the list of
    ``{key, value, propagateAtLaunch}`` blocks an autoscaling group takes (``gpulease.core.resources.tag_map``)."""
    tags = default_tags(provider)
    raw = plain(known(props, key, default={}))
    if raw is not UNKNOWN:
        tags.update(rt.tag_map(raw))
    return tags


def plain(value: Any) -> Any:
    """Proxied properties as plain data, a value not known during preview kept as ``UNKNOWN``."""
    if value is UNKNOWN:
        return UNKNOWN
    if _DictProxy is not None and type(value) in (_DictProxy, _ListProxy):
        return _plain_proxied(value)
    if isinstance(value, Mapping):
        return {k: plain(known(value, k)) for k in value}
    if isinstance(value, Sequence) and not isinstance(value, str | bytes):
        return [plain(known(value, i)) for i in range(len(value))]
    return value


def _plain_proxied(value: Any) -> Any:
    """``plain`` for pulumi-policy's own proxies, read through the target each one hands out under the key
    ``"__target"`` (``pulumi_policy/proxy.py``): the same result as reading every element through the proxy and
    catching ``UnknownValueError``, without raising one per unknown value; every stack rule converts the whole
    stack, so this is most of judging a large sweep. A scalar element is taken as it is without a call of its own
    (an exact ``str`` that is one of the SDK's unknown sentinels, ``_is_unknown``, becomes ``UNKNOWN``)."""
    kind = type(value)
    if kind is _DictProxy:
        return {k: (_plain_proxied(x) if type(x) in _PROXIES else UNKNOWN if type(x) is str and x in _SENTINELS else x)
                for k, x in value["__target"].items()}
    if kind is _ListProxy:
        return [_plain_proxied(x) if type(x) in _PROXIES else UNKNOWN if type(x) is str and x in _SENTINELS else x
                for x in value["__target"]]
    if kind is str and _is_unknown(value):
        return UNKNOWN
    return value


def plain_element(value: Any) -> Any:
    """``plain`` of one element a proxy holds (a proxy, a scalar, an unknown sentinel), as ``_plain_proxied``
    reads it inside its parent."""
    return _plain_proxied(value) if type(value) in _PROXIES else UNKNOWN if type(value) is str and value in _SENTINELS else value


_PROXIES = (_DictProxy, _ListProxy)
_SENTINELS = frozenset((_proxy.UNKNOWN_BOOLEAN_VALUE, _proxy.UNKNOWN_NUMBER_VALUE, _proxy.UNKNOWN_STRING_VALUE,
                        _proxy.UNKNOWN_ARRAY_VALUE, _proxy.UNKNOWN_ASSET_VALUE, _proxy.UNKNOWN_ARCHIVE_VALUE,
                        _proxy.UNKNOWN_OBJECT_VALUE))
"""The strings the SDK's ``_is_unknown`` takes for unknown values (pulumi-policy 1.21.0, ``proxy.py``)."""


# --- one conversion per request -----------------------------------------------------------------------------

_REQUEST = threading.local()
"""The memo of the request this thread answers (the analyzer serves each request on one thread of its pool)."""


@contextmanager
def one_request() -> Iterator[None]:
    """While the servicer answers one request, what a rule derives from the request's resources (``registered``,
    ``memoized``) is computed once and shared by every rule: the resources of one request never change while it is
    answered. Outside a request (a rule called directly) nothing is kept."""
    outer = getattr(_REQUEST, "memo", None)
    _REQUEST.memo = {}
    try:
        yield
    finally:
        _REQUEST.memo = outer


def memoized(kind: str, of: Sequence[Any], compute: Callable[[], Any]) -> Any:
    """``compute()`` once per request for the same objects ``of`` (by identity, kept alive with the value); every
    call outside a request computes. The value is shared: callers read it and never change it."""
    memo = getattr(_REQUEST, "memo", None)
    if memo is None:
        return compute()
    key = ("id", kind, *map(id, of))
    found = memo.get(key)
    if found is not None and all(a is b for a, b in zip(found[0], of, strict=True)):
        return found[1]
    value = compute()
    memo[key] = (tuple(of), value)
    return value


def memoized_by(kind: str, key: Any, compute: Callable[[], Any]) -> Any:
    """``compute()`` once per request for the same hashable ``key`` (by value); every call outside a request
    computes."""
    memo = getattr(_REQUEST, "memo", None)
    if memo is None:
        return compute()
    full = ("value", kind, key)
    if full not in memo:
        memo[full] = compute()
    return memo[full]


def plain_props(props: Any) -> Any:
    """``plain(props)`` of a resource's properties once per request (``memoized``), shared by every rule of the
    request: callers only read it. The servicer hands over the reading it made with the proxies
    (``remember_plain``)."""
    return memoized("plain", (props,), lambda: plain(props))


def remember_plain(props: Any, value: Any) -> None:
    """``plain_props(props)`` is ``value`` for the rest of this request (``value`` is ``plain(props)``, made in the
    same pass as ``props``); nothing is kept outside a request."""
    memo = getattr(_REQUEST, "memo", None)
    if memo is not None:
        memo[("id", "plain", id(props))] = ((props,), value)


def registered(r: Any) -> Registered:
    """A policy resource (``PolicyResource``) as the compute readers take it (``gpulease.core.compute``); converted
    once per request (``one_request``)."""
    return memoized("registered", (r,), lambda: _registered(r))


def _registered(r: Any) -> Registered:
    deps = getattr(r, "property_dependencies", None) or {}
    return Registered(
        type=r.resource_type, name=r.name, urn=r.urn, props=plain_props(r.props),
        dependencies={k: [d.urn for d in v] for k, v in deps.items()},
        default_tags=default_tags(getattr(r, "provider", None)),
    )


UNIT_TYPES = (*FORMS, CLOUDFORMATION_STACK, *sorted(RESIZERS))
"""What the stack rules reading compute units (``units``) are handed: every compute form, the CloudFormation
stacks whose templates may hold more (``gpulease.core.compute.cloudformation``), and the scheduled actions that
set a group's size (``RESIZERS``: ``compute_units`` reads them, so a group's size is the same however handed)."""


def units(resources: Iterable[Any]) -> list[tuple[ComputeUnit, Any]]:
    """The stack's compute units (``gpulease.core.compute.compute_units``), each with its policy resource: once per
    request for the same resources that make units (``memoized``; seven stack rules read them). A unit names only
    resources it was made from, so the policy resource of each is found among those."""
    makers = [r for r in resources if form_of(r.resource_type) is not None
              or r.resource_type == CLOUDFORMATION_STACK or r.resource_type in RESIZERS]
    return memoized("units", makers, lambda: _units(makers))


def _units(makers: list[Any]) -> list[tuple[ComputeUnit, Any]]:
    by_urn = {r.urn: r for r in makers}
    return [(unit, by_urn[unit.resource.host or unit.resource.urn]) for unit in compute_units([registered(r) for r in makers])]


def now() -> datetime:
    """The shared clock (``gpulease.core.clock``), so an offline review can judge at the moment it rendered."""
    return clock.utcnow()


def parse_time(value: Any) -> datetime | None:
    if not isinstance(value, str):
        return None
    try:
        return v.parse_rfc3339(value)
    except ValueError:
        return None


def checkpoint_bucket(uri: Any) -> tuple[str, str] | None:
    """``(scheme, bucket)`` of an ``s3://bucket/prefix`` or ``oss://bucket/prefix`` URI."""
    if not isinstance(uri, str):
        return None
    match = re.match(r"^(s3|oss)://([a-z0-9][a-z0-9.-]{1,61}[a-z0-9])(/.*)?\Z", uri)
    return (match.group(1), match.group(2)) if match else None


def port_range_covers(low: float | None, high: float | None, ports: Iterable[int]) -> list[int]:
    """Which of ``ports`` fall in ``[low, high]``; a missing bound means every port."""
    lo = -1 if low is None else low
    hi = 65535 if high is None else high
    if lo == -1 and hi == -1:  # "-1/-1" and protocol -1 mean every port
        lo, hi = 0, 65535
    return [p for p in ports if lo <= p <= hi]


def broad_cidr(cidr: Any, min_v4: int, min_v6: int) -> str | None:
    """Why ``cidr`` counts as open to the internet ("the whole internet", "a /8"), or None."""
    if not isinstance(cidr, str):
        return None
    try:
        net = ipaddress.ip_network(cidr, strict=False)
    except ValueError:
        return None
    minimum = min_v4 if net.version == 4 else min_v6
    if net.prefixlen == 0:
        return "the whole internet"
    if net.prefixlen < minimum:
        return f"a /{net.prefixlen} (more than a /{minimum})"
    return None


def display(resource_type: str, name: str) -> str:
    return f"{resource_type.split(':')[-1]} {name!r}"


def display_unit(unit: ComputeUnit) -> str:
    """``Group 'trainers' (autoscaling group of g5.xlarge, up to 4)``: what a compute-unit finding names."""
    res = unit.resource
    size = unit.capacity
    count = f", up to {size:g}" if isinstance(size, int | float) and unit.form.capacity(res.props) is not None else ""
    kind = "" if unit.form.label in ("EC2 instance", "ECS instance") else f"{unit.form.label} of "
    return f"{display(res.type, res.name)} ({kind}{unit.describe_types()}{count})"
