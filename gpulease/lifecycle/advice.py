"""What a stack file says that is valid but probably not meant: said once, as advisories, by ``plan``, ``init`` and
``up``; never a refusal (the spec is valid and the user may mean it).

- **spot without a checkpoint hook or signal**: on a spot notice (two minutes on AWS) the watchdog syncs
  ``/data/checkpoints``, but the job is never asked to save first, so the sync carries the last checkpoint the job
  happened to write (``checkpoints.hook`` / ``checkpoints.signal``, docs/config.md);
- **``budgetAlerts.emails`` on Alibaba Cloud**: the kit creates the e-mail budget alerts on AWS only (AWS Budgets);
  pulumi-alicloud has no budget resource, so on Alibaba Cloud nothing sends them (docs/clouds.md, "Budget
  alerts"); the deadline and the budget check still hold;
- **an example owner**: ``owner`` at a domain reserved for examples (RFC 2606: example.com, example.org,
  example.net, ``.example``, ``.test``, ``.invalid``) or one of the example stacks' owners, left in place."""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

from components.spec import prompted
from components.spec.load import load_stack_spec
from gpulease.core.errors import UserError

EXAMPLE_DOMAINS = ("example.com", "example.org", "example.net")
EXAMPLE_SUFFIXES = (".example", ".test", ".invalid")
"""The names RFC 2606 reserves for documentation (https://www.rfc-editor.org/rfc/rfc2606): never a real mailbox."""


def example_owner(owner: str | None) -> bool:
    domain = (owner or "").rpartition("@")[2].strip().lower().rstrip(".")
    return bool(domain) and (domain in EXAMPLE_DOMAINS or domain.endswith(tuple(f".{d}" for d in EXAMPLE_DOMAINS))
                             or domain.endswith(EXAMPLE_SUFFIXES))


def spec_advisories(spec: Any) -> list[str]:
    """One line per advisory of a loaded stack spec (``components.spec.load.StackSpec``)."""
    out: list[str] = []
    for exp in spec.experiments:
        name = f"experiment {exp.name!r}"
        ckpt = exp.checkpoints
        if exp.market == "spot" and ckpt.enabled and not ckpt.hook and not ckpt.signal:
            out.append(f"{name}: spot without checkpoints.hook or checkpoints.signal: on a spot notice the job is "
                       "never asked to save, only its last checkpoint is synced; accepted: checkpoints.signal: USR1 "
                       "with checkpoints.process: train.py, or a checkpoints.hook")
        if spec.cloud == "alicloud" and exp.budget_alerts.emails:
            out.append(f"{name}: budgetAlerts.emails is not sent on Alibaba Cloud (the kit makes e-mail budget "
                       "alerts on AWS only); the deadline and the budget check still hold; accepted: leave it out")
        if example_owner(exp.owner):
            out.append(f"{name}: owner {exp.owner!r} is an example address (left from an example?); every resource "
                       "is tagged with it; accepted: your own e-mail")
    return list(dict.fromkeys(out))


def config_advisories(stack: str, config: Mapping[str, Any]) -> list[str]:
    """The advisories of a stack's config; none for a config that is not a gpulease stack or not valid (the
    review says what is wrong with it)."""
    ours = prompted.stack_config(config)
    if not ours:
        return []
    try:
        return spec_advisories(load_stack_spec(stack, ours, source=stack))
    except (UserError, ValueError):
        return []


def lines(found: Iterable[str]) -> list[str]:
    return [f"  advisory: {line}" for line in found]
