"""How ``gpulease plan`` shows its reviews: a pull-request comment and JSON here, the terminal report in
``terminal`` (rich, loaded only for it); the cells both kinds share."""

from __future__ import annotations

import json
import re
from typing import Any

from gpulease.core import resources as rt
from gpulease.core.catalog.freshness import to_date
from gpulease.core.catalog.models import UNDATED, date_label
from gpulease.core.cost import ExperimentCost, StackCost, price_dates_used
from gpulease.core.printable import printable
from gpulease.review import redact
from gpulease.review.cost_text import bounded, cell, cost_json, monthly, rate, usd
from gpulease.review.engine import NO_STACK_FILE, StackReview, exit_code
from gpulease.review.phases import phase_line, phase_prices
from gpulease.review.policy_runner import Violation

COMMENT_MARKER = "<!-- gpulease-plan -->"
"""First line of the pull-request comment; the workflow finds and updates the comment carrying it."""
GITHUB_COMMENT_LIMIT = 65000
MERMAID_MAX_NODES = 120

# Properties worth a reviewer's eye, per resource type (JSON has every input).
KEY_PROPERTIES: dict[str, tuple[str, ...]] = {
    rt.AWS_INSTANCE: ("instanceType", "instanceMarketOptions.marketType", "metadataOptions.httpTokens",
                         "rootBlockDevice.encrypted"),
    rt.AWS_VOLUME: ("size", "type", "encrypted", "availabilityZone"),
    rt.AWS_INGRESS_RULE: ("cidrIpv4", "cidrIpv6", "fromPort", "toPort"),
    rt.AWS_BUCKET: ("bucket", "forceDestroy"),
    rt.AWS_SCHEDULE: ("scheduleExpression", "actionAfterCompletion"),
    rt.ALI_INSTANCE: ("instanceType", "spotStrategy", "autoReleaseTime", "httpTokens"),
    rt.ALI_ECS_DISK: ("size", "category", "encrypted", "deleteWithInstance"),
    rt.ALI_SECURITY_GROUP_RULE: ("type", "ipProtocol", "portRange", "cidrIp"),
    rt.ALI_BUCKET: ("bucket", "acl"),
    rt.TIME_STATIC: ("rfc3339",),
}
LEVEL_ORDER = ("mandatory", "remediate", "advisory")


def _get(data: Any, dotted: str) -> Any:
    value = data
    for part in dotted.split("."):
        if not isinstance(value, dict):
            return None
        value = value.get(part)
    return value


def _fmt(value: Any) -> str:
    if isinstance(value, float) and value.is_integer():
        value = int(value)
    return json.dumps(value) if not isinstance(value, str) else value


def key_properties(type_: str, inputs: dict[str, Any]) -> str:
    props = KEY_PROPERTIES.get(type_, ())
    return "; ".join(f"{p}={_fmt(_get(inputs, p))}" for p in props if _get(inputs, p) is not None)


def short_type(type_: str) -> str:
    return type_.split(":")[-1]


def type_label(type_: str) -> str:
    """The resource table's type column: ``rds:Instance`` and ``ec2:Instance``, not two "Instance"."""
    return rt.module_type(type_)


def replacement_options(res: Any) -> str:
    """The options that decide how a change replaces the resource, where set; '' when the engine's defaults hold.

    A reviewer reads ``delete-before-replace`` (the old one goes first), ``replace on: x`` (a change of x replaces
    it on purpose) and ``ignore: x`` (a new value of x is not applied). A property in both is said once: the
    engine ignores its changes, so they never reach the replace-on-change test."""
    parts = []
    both = [p for p in res.replace_on_changes if p in res.ignore_changes]
    if res.delete_before_replace:
        parts.append("delete-before-replace")
    if replace := [p for p in res.replace_on_changes if p not in both]:
        parts.append("replace on: " + ", ".join(replace))
    if ignore := [p for p in res.ignore_changes if p not in both]:
        parts.append("ignore: " + ", ".join(ignore))
    if both:
        parts.append("ignore: " + ", ".join(both) + " (so no replacement on a new value)")
    return "; ".join(parts)


_ASSIGNED = re.compile(r"^(\d{1,3}(\.\d{1,3}){3}|arn:|acs:|[a-z]{1,4}-[0-9a-z]{8,})")
"""Output values only the cloud assigns: an IPv4 address, an ARN (AWS) or ARN-like name (Alibaba), an id."""
PLACEHOLDER_NOTE = "placeholder: an offline mock value, the real one is known after pulumi up"


def placeholder_outputs(rendering: Any) -> list[str]:
    """The stack outputs whose value holds something only the cloud assigns (an id, an address, an ARN), which
    the offline review filled in from the mocks: shown as placeholders in every format, never as real."""
    made_up: set[str] = set()
    for res in rendering.resources:
        given = {v for v in (res.inputs or {}).values() if isinstance(v, str)}
        if res.id and str(res.id) not in given and len(str(res.id)) >= 6:
            made_up.add(str(res.id))  # an id the cloud assigns (a bucket's is its given name: not made up)
        for key, value in (res.outputs or {}).items():
            if key not in (res.inputs or {}) and isinstance(value, str) and _ASSIGNED.match(value):
                made_up.add(value)
    found = []
    for key, value in rendering.outputs.items():
        text = json.dumps(value, default=str) if not isinstance(value, str) else value
        if any(v in text for v in made_up):
            found.append(key)
    return found


def common_name_prefix(names: list[str]) -> str:
    """The dash-ended prefix every name shares (``llama7b-lora-``), or '' when there is none worth stating."""
    if len(names) < 2:
        return ""
    head = names[0]
    for name in names[1:]:
        while not name.startswith(head):
            head = head[:-1]
    head = head[: head.rfind("-") + 1] if "-" in head else ""
    return head if len(head) >= 4 and all(len(n) > len(head) for n in names) else ""


def resource_groups(resources: list[Any]) -> list[tuple[str, list[str], str]]:
    """The resource table's rows: ``(type, names, notes)``. Resources of one type whose notes (retained,
    replacement options, key properties) are the same share a row, in registration order of their first."""
    rows: dict[tuple[str, str], list[str]] = {}
    for res in resources:
        notes = "; ".join(part for part in ("retained" if res.retain_on_delete else "", replacement_options(res),
                                             key_properties(res.type, res.inputs)) if part)
        rows.setdefault((type_label(res.type), notes), []).append(res.name)
    return [(type_, names, notes) for (type_, notes), names in rows.items()]


def budget_total(cost: StackCost) -> float | None:
    """The stack's budget: the one value every experiment shares (a sweep), else the sum of their budgets."""
    budgets = [e.budget_usd for e in cost.experiments if e.budget_usd is not None]
    if not budgets:
        return None
    return budgets[0] if len(set(budgets)) == 1 else sum(budgets)


def grouped(review: StackReview) -> dict[str, list[Violation]]:
    """Violations by level, each level in resource registration order (stack-wide findings first)."""
    order = {r.urn: i for i, r in enumerate(review.rendering.resources)}
    groups: dict[str, list[Violation]] = {}
    found = review.policy.violations if review.policy else []
    for v in sorted(found, key=lambda x: (order.get(x.urn or "", -1), x.policy)):
        level = "mandatory" if v.level == "remediate" else v.level
        groups.setdefault(level, []).append(v)
    return groups


def _unbounded(experiment: ExperimentCost) -> bool:
    """It bills by the hour with no max runtime to stop it: its worst case has no bound."""
    return experiment.runtime_hours is None and experiment.max_hourly_usd > 0


def prices_as_of(cost: StackCost, experiment: str | None = None) -> str:
    """The oldest date of the prices behind a stack's (or one experiment's) figures."""
    lines = [line for line in cost.lines if experiment is None or line.experiment == experiment]
    return min(price_dates_used(lines), default=cost.prices_as_of or "n/a")


def aged(as_of: str, review: StackReview) -> str:
    when = to_date(as_of)
    if when == UNDATED:
        return f"{date_label(when)} (age unknown)"
    if when is None or review.reviewed_at is None:
        return as_of
    return f"{as_of} ({(review.reviewed_at.date() - when).days} days old)"


def worst(cost: StackCost, limit: int | None = None) -> str:
    if any(map(_unbounded, cost.experiments)):
        return "unbounded (no max runtime)"
    return usd(cost.worst_case_usd) if cost.worst_case_known else unknown_worst(cost, limit)


def unknown_worst(cost: StackCost | ExperimentCost, limit: int | None = None) -> str:
    """``unknown: <what is not priced>``: an unpriced item never reads as $0.00; ``limit`` shortens the reason for
    a summary cell (the stack's section names it whole)."""
    reason = cost.worst_case_reason or "an instance is unpriced"
    if limit is not None and len(reason) > limit:
        reason = reason[:limit].rstrip() + "…"
    return f"unknown: {reason}"


# --- pull-request comment ---------------------------------------------------------------------------------


def _cell(text: Any) -> str:
    return printable(str(text).replace("|", "\\|").replace("\n", "<br>"))


def _mermaid_label(text: str) -> str:
    return printable(re.sub(r'["<>{}\[\]]', "", text))


def mermaid(review: StackReview) -> str:
    """The resource tree (parent -> child) as a mermaid flowchart; siblings of one type collapse when large."""
    r = review.rendering
    root = f"{r.project}/{r.stack}"
    children: dict[str | None, list] = {}
    urns = {x.urn for x in r.resources}
    for res in r.resources:
        children.setdefault(res.parent if res.parent in urns else None, []).append(res)
    collapse = len(r.resources) > MERMAID_MAX_NODES
    lines = ["flowchart LR", f'  n0["{_mermaid_label(root)}"]']
    ids = {None: "n0"}
    counter = 0

    def walk(parent: str | None) -> None:
        nonlocal counter
        kids = children.get(parent, [])
        if collapse:
            by_type: dict[str, list] = {}
            for kid in kids:
                by_type.setdefault(kid.type, []).append(kid)
            for type_, group in by_type.items():
                if len(group) > 1 and not any(g.urn in children for g in group):
                    counter += 1
                    lines.append(f'  n{counter}["{len(group)} x {_mermaid_label(short_type(type_))}"]')
                    lines.append(f"  {ids[parent]} --> n{counter}")
                    continue
                for kid in group:
                    add(parent, kid)
        else:
            for kid in kids:
                add(parent, kid)

    def add(parent: str | None, kid: Any) -> None:
        nonlocal counter
        counter += 1
        ids[kid.urn] = f"n{counter}"
        lines.append(f'  n{counter}["{_mermaid_label(short_type(kid.type))}<br/>{_mermaid_label(kid.name)}"]')
        lines.append(f"  {ids[parent]} --> n{counter}")
        walk(kid.urn)

    walk(None)
    return "\n".join(lines)


def _summary_row(review: StackReview) -> str:
    icon = {"pass": "✅ pass", "fail": "❌ fail", "error": "⛔ error", "partial": "⚠️ partial"}[review.status]
    groups = grouped(review) if review.policy else {}
    c = review.cost
    return (
        f"| `{printable(review.name)}` | {icon} | {len(review.rendering.custom_resources)} | "
        f"{len(groups.get('mandatory', []))} | {len(groups.get('advisory', []))} | "
        f"{cell(c.hourly_usd, c.hourly_reason, rate) if c else 'n/a'} | "
        f"{_cell(worst(c, limit=60)) if c else 'n/a'} | "
        f"{usd(budget_total(c)) if c else 'n/a'} |"
    )


def _stack_section(review: StackReview, detailed: bool) -> list[str]:
    r = review.rendering
    label = f"`{review.stack_file.name}`" if review.stack_file is not None else NO_STACK_FILE
    out = [f"### `{printable(review.name)}`", "", f"Stack file: {printable(label)}", ""]
    if r.error and not r.partial:
        return [*out, f"**Not reviewed (bad input):** {_cell(r.error)}", ""]
    if r.partial:
        out += [f"**Partial review:** {_cell(r.error)}. The findings below cover only the "
                f"{len(r.custom_resources)} resources the review saw registered; the rest of the program (or what a "
                "component without a model creates) was not seen.",
                ""]
    groups = grouped(review)
    titles = {"mandatory": "Mandatory violations (block the deployment)", "advisory": "Advisory findings"}
    if not groups:
        out += ["No policy violations.", ""]
    for level in ("mandatory", "advisory"):
        found = groups.get(level, [])
        if not found:
            continue
        out += [f"#### {titles[level]} ({len(found)})", "", "| policy | resource | finding |", "| --- | --- | --- |"]
        out += [f"| `{v.policy}` | {_cell(v.resource_name or '(stack)')} | {_cell(v.detail)} |" for v in found]
        out.append("")
    c = review.cost
    if c is not None:
        out += ["#### Estimated cost", "",
                "| experiment | per hour | max per hour | runtime | worst case | budget | prices as of |",
                "| --- | --- | --- | --- | --- | --- | --- |"]
        for e in c.experiments:
            runtime = f"{e.runtime_hours:g} h" if e.runtime_hours else "none"
            worst = "unbounded" if _unbounded(e) else usd(e.worst_case_usd) if e.worst_case_known else unknown_worst(e)
            out.append(f"| {_cell(e.name)} | {cell(e.hourly_usd, e.hourly_reason, rate)} | "
                       f"{cell(e.max_hourly_usd, e.hourly_reason, rate)} | {runtime} | "
                       f"{_cell(worst)} | {usd(e.budget_usd)} | {prices_as_of(c, e.name)} |")
        if c.hourly_reason:
            out += ["", f"Per hour: {_cell(bounded(c.hourly_usd, c.hourly_reason, rate(c.hourly_usd)))}."]
        after = bounded(c.after_destroy_monthly_usd, c.after_destroy_reason, monthly(c.after_destroy_monthly_usd))
        out += ["", f"After destroy (retained disks and buckets): {_cell(after)}."
                + f" Oldest price used: {aged(prices_as_of(c), review)}, from the {_cell(c.price_catalog)}."]
        if c.unknown_prices:
            out.append(f"Not priced: {_cell('; '.join(c.unknown_prices))}.")
        if (phases := phase_prices(r)) is not None:  # a stack that declares its phase: each phase's price
            out.append(_cell(phase_line(phases)) + ".")
        out.append("")
    if placeholders := placeholder_outputs(r):
        out += [f"Outputs {', '.join(f'`{k}`' for k in placeholders)}: {PLACEHOLDER_NOTE}.", ""]
    if detailed:
        out += [f"<details><summary>Resources ({len(r.custom_resources)})</summary>", "",
                "| type | name | retained | replacement | key properties |", "| --- | --- | --- | --- | --- |"]
        out += [f"| `{type_label(x.type)}` | {_cell(x.name)} | {'yes' if x.retain_on_delete else ''} | "
                f"{_cell(replacement_options(x))} | {_cell(key_properties(x.type, x.inputs))} |"
                for x in r.custom_resources]
        out += ["", "</details>", "", "<details><summary>Resource tree</summary>", "", "```mermaid", mermaid(review),
                "```", "", "</details>", ""]
    return out


def markdown(reviews: list[StackReview]) -> str:
    """The pull-request comment. Falls back to no resource tables and diagrams when it would be too long. Every
    secret value is replaced before the length is measured (``redact``)."""
    hide = redact.for_reviews(reviews)
    for detailed in (True, False):
        failing = sum(1 for r in reviews if r.status != "pass")
        head = [
            COMMENT_MARKER,
            f"## gpulease plan: {len(reviews)} stack{'s' if len(reviews) != 1 else ''}, "
            + ("all pass" if not failing else f"{failing} need{'s' if failing == 1 else ''} attention"),
            "",
            "| stack | verdict | resources | mandatory | advisory | per hour | worst case | budget |",
            "| --- | --- | --- | --- | --- | --- | --- | --- |",
            *[_summary_row(r) for r in reviews],
            "",
        ]
        body = [line for r in reviews for line in _stack_section(r, detailed)]
        foot = ["Offline review: each program ran under mocks and the `gpulease-guardrails` pack ran through the "
                "Pulumi policy analyzer; no cloud was called."]
        if not detailed:
            foot.insert(0, "_Resource tables and diagrams were left out to fit one comment; run `gpulease plan` "
                        "locally for them._\n")
        # The marker is the kit's own line: a secret equal to a word of it must not change it (``--output`` finds
        # its own report by it).
        text = COMMENT_MARKER + "\n" + hide.text("\n".join([*head[1:], *body, *foot]) + "\n")
        if len(text) <= GITHUB_COMMENT_LIMIT:
            return text
    return text[: GITHUB_COMMENT_LIMIT - 100] + "\n\n_(truncated)_\n"


# --- JSON ----------------------------------------------------------------------------------------------------


def to_json(reviews: list[StackReview]) -> dict[str, Any]:
    out = []
    for review in reviews:
        r = review.rendering
        out.append(
            {
                "project": r.project,
                "stack": r.stack,
                "stackFile": review.stack_file_label if review.stack_file is not None else None,
                "status": review.status,
                "partial": r.partial,
                "error": r.error,
                "resources": [
                    {
                        "urn": x.urn,
                        "type": x.type,
                        "name": x.name,
                        "custom": x.custom,
                        "parent": x.parent,
                        "inputs": x.inputs,
                        "options": {
                            "protect": x.protect,
                            "retainOnDelete": x.retain_on_delete,
                            "deleteBeforeReplace": x.delete_before_replace,
                            "replaceOnChanges": x.replace_on_changes,
                            "ignoreChanges": x.ignore_changes,
                            "dependencies": sorted(x.dependencies),  # a set: stable across runs
                            "provider": x.provider,
                        },
                    }
                    for x in r.resources
                ],
                "violations": [
                    {"policy": v.policy, "level": v.level, "urn": v.urn, "resourceType": v.resource_type,
                     "resourceName": v.resource_name, "message": v.detail, "stage": v.stage}
                    for v in (review.policy.violations if review.policy else [])
                ],
                "policyLevels": review.policy.levels if review.policy else {},
                "cost": cost_json(review.cost) if review.cost is not None else None,
                "outputs": r.outputs,
                "placeholders": placeholder_outputs(r),
            }
        )
    return {"exitCode": exit_code(reviews), "stacks": redact.for_reviews(reviews).data(out)}
