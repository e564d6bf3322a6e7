"""``gpulease plan <stack>``: what a stack would create, offline (program under mocks), as a table or JSON."""

from __future__ import annotations

import argparse
import json
from pathlib import Path
from typing import Any

from rich.console import Console
from rich.table import Table

from gpulease import stacks
from gpulease.render import PROJECT_ROOT, Rendering, load_stack_file, render

# Properties worth a reviewer's eye, per resource type (shown in the table; JSON has every input).
KEY_PROPERTIES: dict[str, tuple[str, ...]] = {
    "aws:ec2/instance:Instance": ("instanceType", "instanceMarketOptions", "metadataOptions", "rootBlockDevice.encrypted"),
    "aws:ebs/volume:Volume": ("size", "type", "encrypted", "availabilityZone"),
    "aws:vpc/securityGroupIngressRule:SecurityGroupIngressRule": ("cidrIpv4", "cidrIpv6", "fromPort", "toPort"),
    "aws:s3/bucket:Bucket": ("bucket", "forceDestroy"),
    "aws:scheduler/schedule:Schedule": ("scheduleExpression", "actionAfterCompletion"),
    "time:index/static:Static": ("rfc3339",),
}


def register(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser("plan", help="review what stacks would create, offline (no credentials, no Pulumi CLI)")
    p.add_argument("stacks", nargs="+", help="stack names in stacks/, stack files, or Pulumi project directories")
    p.add_argument("--format", choices=("table", "json"), default="table")
    p.set_defaults(func=run)


def _get(data: dict[str, Any], dotted: str) -> Any:
    value: Any = data
    for part in dotted.split("."):
        if not isinstance(value, dict):
            return None
        value = value.get(part)
    return value


def render_target(project_dir: Path, stack_file: Path) -> Rendering:
    project, _ = stacks.project_info(project_dir)
    config = load_stack_file(stack_file)
    program_dir = None if project_dir == PROJECT_ROOT else project_dir
    return render(config, stack=stacks.stack_name(stack_file), project=project, program_dir=program_dir)


def to_json(rendering: Rendering) -> dict[str, Any]:
    return {
        "stack": rendering.stack,
        "project": rendering.project,
        "error": rendering.error,
        "resources": [
            {
                "urn": r.urn,
                "type": r.type,
                "name": r.name,
                "parent": r.parent,
                "inputs": r.inputs,
                "options": {
                    "protect": r.protect,
                    "retainOnDelete": r.retain_on_delete,
                    "ignoreChanges": r.ignore_changes,
                    "dependencies": r.dependencies,
                },
            }
            for r in rendering.resources
        ],
        "outputs": rendering.outputs,
    }


def print_table(rendering: Rendering, console: Console) -> None:
    table = Table(title=f"gpulease plan: {rendering.project}/{rendering.stack}", show_lines=False)
    table.add_column("type")
    table.add_column("name")
    table.add_column("retained")
    table.add_column("key properties")
    for r in rendering.resources:
        if not r.custom:
            continue
        props = KEY_PROPERTIES.get(r.type, ())
        shown = "; ".join(f"{p}={json.dumps(_get(r.inputs, p))}" for p in props if _get(r.inputs, p) is not None)
        table.add_row(r.type.split(":")[-1], r.name, "yes" if r.retain_on_delete else "", shown)
    console.print(table)
    for key in ("deadline", "instanceType", "sshCommand", "checkpointUri"):
        if key in rendering.outputs:
            console.print(f"[bold]{key}[/bold]: {rendering.outputs[key]}")


def run(args: argparse.Namespace) -> int:
    console = Console()
    results = [render_target(project_dir, f) for target in args.stacks for project_dir, f in stacks.resolve(target)]
    failed = any(r.error for r in results)
    if args.format == "json":
        print(json.dumps([to_json(r) for r in results], indent=2, default=str))
    else:
        for r in results:
            if r.error:
                console.print(f"[red]{r.stack}: {r.error}[/red]")
            else:
                print_table(r, console)
    return 2 if failed else 0
