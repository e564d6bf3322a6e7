"""The replace-trigger table: it covers every resource type gpulease registers, names real SDK inputs, cites its
source, and the classifier applies it the way the engine plans an update."""

from __future__ import annotations

import importlib
from pathlib import Path

import pytest

from gpulease.review.render import CapturedResource, Rendering, render_stack_file
from gpulease.review.replacement import REPLACE_TRIGGERS, UnknownTypeError, classify, rule_for
from tests.support.alicloud import ali_experiment, render_ali
from tests.support.clock import FIXED_NOW
from tests.support.paths import ROOT, STACKS_DIR
from tests.support.specs import experiment, render_experiment

DOC = ROOT / "docs" / "provider-facts.md"


def registered_types() -> set[str]:
    """Every custom resource type the example stacks and the main variants register (providers included)."""
    renderings = [render_stack_file(p, now=FIXED_NOW) for p in sorted(STACKS_DIR.glob("Pulumi.*.yaml"))]
    renderings += [
        render_experiment(experiment(ssh={"mode": "ssm"})),
        render_experiment(experiment(region="eu-west-1")),
        render_ali(ali_experiment(region="cn-shanghai")),
        render_ali(ali_experiment(network={"subnetId": "vsw-bp1existing"}, checkpoints={"enabled": False},
                                  market="on-demand", onDemandReason="interactive debugging session")),
    ]
    for r in renderings:
        assert r.error is None, r.error
    return {x.type for r in renderings for x in r.resources if x.custom}


def sdk_inputs(type_: str) -> set[str]:
    """The input property names (as the engine sees them) of a type, read from the installed SDK."""
    if type_.startswith("pulumi:providers:"):
        module, cls = f"pulumi_{type_.split(':')[-1]}", "Provider"
    else:
        package, path, cls = type_.split(":")
        module = {"time": "pulumiverse_time"}.get(package, f"pulumi_{package}")
        if not path.startswith("index/"):
            module += "." + path.split("/")[0]
    mod = importlib.import_module(module)
    # A resource whose name clashes with a nested type has its arguments in ``<Name>InitArgs``.
    args = getattr(mod, f"{cls}InitArgs", None) or getattr(mod, f"{cls}Args")
    return {getattr(v.fget, "_pulumi_name", None) or k for k, v in vars(args).items() if isinstance(v, property)}


def test_every_registered_type_has_an_entry() -> None:
    missing = registered_types() - set(REPLACE_TRIGGERS)
    assert not missing, f"no replace-trigger entry for {sorted(missing)}"


@pytest.mark.parametrize("type_", sorted(REPLACE_TRIGGERS))
def test_entries_name_real_inputs_and_cite_a_source(type_: str) -> None:
    rule = rule_for(type_)
    inputs = sdk_inputs(type_)
    named = {p.split(".")[0] for p in (*rule.replace_on, *rule.when, *rule.in_place)}
    named |= {other.split(".")[0] for other, _ in rule.when.values()}
    assert named <= inputs, f"{type_}: not inputs of the SDK: {sorted(named - inputs)}"
    assert rule.replace_on and rule.source.strip()
    assert rule.source.startswith("https://") or "Pulumi engine" in rule.source


def test_the_docs_table_lists_every_entry() -> None:
    text = DOC.read_text()
    for type_, rule in REPLACE_TRIGGERS.items():
        (row,) = [line for line in text.splitlines() if line.startswith(f"| `{type_}` |")]
        for path in rule.replace_on:
            assert f"`{path}`" in row, f"{type_}: {path} missing from the docs table"


# --- the classifier on hand-made renderings ------------------------------------------------------------------


def res(name: str, type_: str, inputs: dict, **options) -> CapturedResource:
    fields = {"protect": False, "retain_on_delete": False, "ignore_changes": [], "dependencies": [],
              "property_dependencies": {}, "delete_before_replace": False, "replace_on_changes": []}
    fields.update(options)
    return CapturedResource(urn=f"urn:pulumi:s::p::{type_}::{name}", type=type_, name=name, custom=True,
                            inputs=inputs, outputs={}, id=f"{name}-id", parent=None, provider=None, **fields)


def rendering(*resources: CapturedResource) -> Rendering:
    return Rendering(project="p", stack="s", config={}, resources=list(resources))


INSTANCE, VOLUME = "aws:ec2/instance:Instance", "aws:ebs/volume:Volume"
ATTACH, SCHEDULE = "aws:ec2/volumeAttachment:VolumeAttachment", "aws:scheduler/schedule:Schedule"


def stack(ami: str, user_data: str, size: int, *, replace_on_user_data: bool = True, **instance_options):
    inst = res("vm", INSTANCE, {"ami": ami, "userDataBase64": user_data, "userDataReplaceOnChange": replace_on_user_data,
                                "rootBlockDevice": {"encrypted": True, "tags": {"a": "1"}}}, **instance_options)
    deps = {"instanceId": [inst.urn]}
    return rendering(
        inst,
        res("disk", VOLUME, {"size": size, "availabilityZone": "us-east-1a"}),
        res("attach", ATTACH, {"instanceId": "vm-id", "volumeId": "disk-id"}, property_dependencies=deps),
        res("timer", SCHEDULE, {"target": {"input": "vm-id"}}, property_dependencies={"target": [inst.urn]}),
    )


def actions(changes) -> dict[str, str]:
    return {c.name: c.action for c in changes.values()}


def test_a_replace_trigger_replaces_and_dependents_follow() -> None:
    changes = classify(stack("ami-1", "u", 10), stack("ami-2", "u", 10, delete_before_replace=True))
    assert actions(changes) == {"vm": "replace", "disk": "same", "attach": "replace", "timer": "update"}
    vm, attach = changes["urn:pulumi:s::p::aws:ec2/instance:Instance::vm"], changes[
        "urn:pulumi:s::p::aws:ec2/volumeAttachment:VolumeAttachment::attach"]
    assert vm.triggers == ["ami"] and vm.delete_before_replace
    assert attach.triggers == ["instanceId <- vm"] and not attach.delete_before_replace


def test_user_data_replaces_only_with_replace_on_change() -> None:
    assert actions(classify(stack("a", "u1", 10), stack("a", "u2", 10)))["vm"] == "replace"
    kept = classify(stack("a", "u1", 10, replace_on_user_data=False), stack("a", "u2", 10, replace_on_user_data=False))
    assert actions(kept) == {"vm": "update", "disk": "same", "attach": "same", "timer": "same"}


def test_in_place_changes_and_nested_paths() -> None:
    before = stack("a", "u", 10)
    after = stack("a", "u", 20)
    after.resources[0].inputs["rootBlockDevice"]["tags"] = {"a": "2"}
    changes = classify(before, after)
    assert actions(changes) == {"vm": "update", "disk": "update", "attach": "same", "timer": "same"}
    assert [c.changed for c in changes.values() if c.name == "vm"] == [["rootBlockDevice.tags.a"]]
    after.resources[0].inputs["rootBlockDevice"]["encrypted"] = False
    assert actions(classify(before, after))["vm"] == "replace"


def test_replace_on_changes_option_and_creates_and_deletes() -> None:
    ali = "alicloud:ecs/instance:Instance"
    before = rendering(res("vm", ali, {"imageId": "img-1"}), res("old", "time:index/static:Static", {"rfc3339": "x"}))
    plain = rendering(res("vm", ali, {"imageId": "img-2"}), res("new", "time:index/static:Static", {"rfc3339": "y"}))
    changes = classify(before, plain)
    assert actions(changes) == {"vm": "update", "old": "delete", "new": "create"}
    assert [c.notes for c in changes.values() if c.name == "vm"] == [
        ["imageId: stops the instance and replaces its system disk (unless replaceOnChanges)"]]
    on_purpose = rendering(res("vm", ali, {"imageId": "img-2"}, replace_on_changes=["imageId"]))
    assert actions(classify(before, on_purpose))["vm"] == "replace"


def test_an_unknown_type_is_refused() -> None:
    with pytest.raises(UnknownTypeError, match="aws:new/thing:Thing"):
        classify(rendering(res("x", "aws:new/thing:Thing", {"a": 1})), rendering(res("x", "aws:new/thing:Thing", {"a": 2})))


def test_docs_exist_next_to_the_table() -> None:
    assert Path(DOC).exists()
