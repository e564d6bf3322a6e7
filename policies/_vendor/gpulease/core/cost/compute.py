"""Pricing the compute forms that run many instances: an autoscaling group, a fleet, a node group or node pool, an
ESS group, an ECS instance set (``gpulease.core.compute``).

The worst case is the form's most instances at once (its max size, a fleet's target capacity, an instance set's
amount), each at the highest hourly cap among the types it may launch: the spot cap when the form sets one,
else the on-demand price (the cap both clouds apply to spot). The expected rate counts the desired size (the max
size when none is given) at the first type's expected price. A type without a catalog price, or a size not
known before the update, leaves the line unpriced: it is listed, and the worst case is unknown.
"""

from __future__ import annotations

from gpulease.core.compute import MIXED, SPOT, UNKNOWN, ComputeUnit, read
from gpulease.core.compute.paths import Uncountable, number
from gpulease.core.cost.pricing import PricedResource, Pricer
from gpulease.core.cost.spot import instance_zone, quote


def group_instances(p: Pricer, r: PricedResource, unit: ComputeUnit) -> None:
    """The instance-hours line of a form that runs up to ``unit.capacity`` instances."""
    cloud = unit.form.cloud
    label = unit.form.label
    size = unit.capacity
    types = list(dict.fromkeys(unit.types))
    if isinstance(size, Uncountable):  # a negative or fractional size never cancels another line's cost
        p.unknown_price(f"{r.name}: the size of the {label} is unknown ({size})")
        p.add(r, f"{'/'.join(types) or 'instances'} ({label}, size unknown)", None, compute=True)
        return
    if size is UNKNOWN or size is None:
        why = unit.form.unsized or "size unknown offline: a value not known before the update runs"
        p.unknown_price(f"{r.name}: the size of the {label} is unknown ({why})")
        p.add(r, f"{'/'.join(types) or 'instances'} ({label}, size unknown)", None, compute=True)
        return
    if unit.form.priced_as:
        p.unknown_price(f"{r.name}: {label} {'/'.join(types) or ''} not priced ({unit.form.priced_as})".replace("  ", " "))
        p.add(r, f"{'/'.join(types) or 'instances'} ({label}, price unknown)", None, compute=True)
        return
    if not types:
        p.unknown_price(f"{r.name}: the instance types of the {label} are not known before the update runs")
        p.add(r, f"instances ({label}, type unknown)", None, compute=True)
        return
    spot = unit.market.kind == SPOT  # a mix is priced on-demand: its on-demand share is not known per hour
    # The spot cap: the form's own, else the template's it launches from (a launch configuration's spot_price).
    sources = [(unit.form, r.inputs), *((t.form, t.props) for t in unit.templates if t.form is not None)]
    caps = [number(read(props, form.spot_cap)) for form, props in sources if form.spot_cap]
    cap = next((c for c in caps if isinstance(c, float)), None) if spot else None
    quotes = []
    for instance_type in types:
        it = p.catalog.get(cloud, instance_type)
        q = quote(it, p.region, spot=spot, cap=cap, zone=instance_zone(r.inputs, None)) if it and p.region else None
        if q is None:
            where = f"in {p.region}" if p.region else "(no region)"
            reason = "not in the catalog" if it is None else f"not priced {where}"
            p.unknown_price(f"{cloud} instance {instance_type} {where} ({reason})")
            p.add(r, f"{'/'.join(types)} ({label} of up to {size:g}, price unknown)", None, compute=True)
            return
        quotes.append(q)
    desired = unit.desired if isinstance(unit.desired, float) else size
    worst = max(quotes, key=lambda q: q.worst_usd)
    first = quotes[0]
    market = "spot" if spot else "on-demand" if unit.market.kind != MIXED else "on-demand/spot mix, priced on-demand"
    p.add(r, f"{'/'.join(types)} {market} × {size:g} ({label} max size; expected {desired:g} × {first.label})",
          desired * first.expected_usd, size * worst.worst_usd, estimate=first.estimate, as_of=first.expected_as_of,
          cap_as_of=worst.worst_as_of, compute=True)
    if unit.form.disks:
        p.note(f"{r.name}: the disks of the {label}'s instances are not counted")
