"""The API-preconditions table (gpulease/review/preconditions.py): every example stack's render (and each with a
bake) meets every documented precondition; each row catches the shape it rules out; the docs show the table."""

from __future__ import annotations

import copy
import dataclasses
import json

import pytest

from gpulease.review import preconditions as pc
from gpulease.review.render import CapturedResource, Rendering
from tests.review.example_renders import STACKS, every_example, example, stack_id
from tests.support.paths import ROOT

DOC = ROOT / "docs" / "provider-facts.md"
CLUSTER = next(p for p in STACKS if p.name == "Pulumi.aws-cluster-4x8.yaml")
ALI_CLUSTER = next(p for p in STACKS if p.name == "Pulumi.ali-cluster-2x8.yaml")
BAKING = next(p for p in STACKS if p.name == "Pulumi.aws-lora-7b.yaml")


@pytest.mark.parametrize("name", [n for n, _ in every_example()])
def test_every_example_stack_meets_every_precondition(name: str) -> None:
    rendering = dict(every_example())[name]
    assert pc.violations(rendering) == []


def edited(r: Rendering, type_: str, edit) -> Rendering:
    """``r`` with every resource of ``type_`` changed by ``edit`` (a copy; the cached rendering stays)."""
    resources = [dataclasses.replace(x, inputs=copy.deepcopy(x.inputs)) for x in r.resources]
    for x in resources:
        if x.type == type_:
            edit(x)
    return dataclasses.replace(r, resources=resources)


def test_an_elastic_ip_through_a_multi_interface_instance_is_caught() -> None:
    r = example(CLUSTER)
    insts = {x.name: x for x in r.of_type("aws:ec2/instance:Instance")}

    def through_instance(eip: CapturedResource) -> None:
        node = eip.name.removesuffix("-ip")
        eip.inputs.pop("networkInterface")
        eip.inputs["instance"] = insts[f"{node}-instance"].id

    found = [f for f in pc.violations(edited(r, "aws:ec2/eip:Eip", through_instance))
             if f[0] != "eip-on-primary-interface"]  # the nodes then lack their address too: the next test
    assert [n for n, _ in found] == ["eip-through-interface"] * 4
    assert "has 4 network interfaces (AWS answers InvalidInstanceID)" in found[0][1]


def test_an_elastic_ip_on_a_secondary_interface_or_none_for_an_efa_node_is_caught() -> None:
    r = example(CLUSTER)
    insts = {x.name: x for x in r.of_type("aws:ec2/instance:Instance")}
    assert all(x.outputs["primaryNetworkInterfaceId"].startswith("eni-") for x in insts.values())

    def secondary(eip: CapturedResource) -> None:
        eip.inputs["networkInterface"] = "eni-0123456789abcdef0"  # an EFA-only card's interface, say

    found = pc.violations(edited(r, "aws:ec2/eip:Eip", secondary))
    assert [n for n, _ in found] == ["eip-on-primary-interface"] * 8
    assert found[0][1].endswith("bound to network interface eni-0123456789abcdef0, which is no instance's primary "
                                "interface; accepted: the node's primary network interface (primaryNetworkInterfaceId)")
    assert "4 network interfaces and no Elastic IP on its primary interface" in found[4][1]
    without = dataclasses.replace(r, resources=[x for x in r.resources if x.type != "aws:ec2/eip:Eip"])
    assert [n for n, _ in pc.violations(without)] == ["eip-on-primary-interface"] * 4
    doubled = dataclasses.replace(r, resources=[*r.resources, *r.of_type("aws:ec2/eip:Eip")])
    assert "2 Elastic IPs" in dict(pc.violations(doubled))["eip-on-primary-interface"]


def test_the_quota_advisories_are_in_the_plan_output(capsys) -> None:
    from gpulease.cli import main

    assert main(["plan", "aws-cluster-4x8", "--format", "json"]) == 0
    (stack,) = json.loads(capsys.readouterr().out)["stacks"]
    found = {v["policy"]: v for v in stack["violations"] if v["policy"].startswith("quota-")}
    assert set(found) == {"quota-eip-quota", "quota-gpu-vcpus"}
    eip = found["quota-eip-quota"]
    assert eip["level"] == "advisory" and "4 Elastic IPs: the default quota is 5 per Region" in eip["message"]
    assert stack["status"] == "pass"  # an advisory: the account's own quota is not visible offline


def test_one_terminate_call_with_every_node_is_caught() -> None:
    r = example(CLUSTER)
    ids = [x.id for x in r.of_type("aws:ec2/instance:Instance")]

    def all_nodes(schedule: CapturedResource) -> None:
        schedule.inputs["target"]["input"] = json.dumps({"InstanceIds": ids})

    found = pc.violations(edited(r, "aws:scheduler/schedule:Schedule", all_nodes))
    assert [n for n, _ in found] == ["terminate-one-id-per-call"] * 4
    assert "one TerminateInstances call with 4 ids" in found[0][1]


def test_a_snapshot_with_the_providers_default_timeout_is_caught() -> None:
    r = example(BAKING, bake=True)
    (snap,) = r.of_type(pc.AWS_SNAPSHOT)
    root = int(max(x.inputs["rootBlockDevice"]["volumeSize"] for x in r.of_type("aws:ec2/instance:Instance")))
    assert snap.custom_timeouts == {"create": f"{30 + root}m"}
    resources = [dataclasses.replace(x, custom_timeouts={}) if x is snap else x for x in r.resources]
    found = pc.violations(dataclasses.replace(r, resources=resources))
    assert found == [("snapshot-create-timeout", f"{snap.name}: waits the default 10m for a snapshot of a {root} GiB "
                      f"system disk; customTimeouts.create of at least {30 + root}m")]


def test_a_spot_instance_in_a_deployment_set_is_caught() -> None:
    r = example(ALI_CLUSTER)
    assert any(x.inputs.get("deploymentSetId") for x in r.of_type("alicloud:ecs/instance:Instance"))
    found = pc.violations(edited(r, "alicloud:ecs/instance:Instance",
                                 lambda i: i.inputs.update(spotStrategy="SpotAsPriceGo")))
    assert found and {n for n, _ in found} == {"deployment-set-limits"}


def test_a_placement_group_over_two_subnets_is_caught() -> None:
    r = example(CLUSTER)
    templates = sorted(r.of_type("aws:ec2/launchTemplate:LaunchTemplate"), key=lambda x: x.name)
    other = templates[0].urn

    def move(t: CapturedResource) -> None:
        if t.urn == other:
            t.inputs["networkInterfaces"][0]["subnetId"] = "subnet-elsewhere"

    found = pc.violations(edited(r, "aws:ec2/launchTemplate:LaunchTemplate", move))
    assert [n for n, _ in found] == ["placement-group-one-zone"]


def test_the_cluster_is_told_it_uses_four_of_the_five_default_elastic_ips_and_its_p_vcpus() -> None:
    found = dict(pc.advisories(example(CLUSTER)))
    assert found["eip-quota"].startswith("4 Elastic IPs: the default quota is 5 per Region")
    assert found["gpu-vcpus"].startswith("384 vCPUs of All P Spot Instance Requests (L-7212CCBC, spot): "
                                         "4 x p4d.24xlarge (96 vCPUs)")
    single = dict(pc.advisories(example(BAKING)))
    assert "eip-quota" not in single


def test_durations_are_read_as_the_engine_writes_them() -> None:
    assert pc.minutes("230m") == 230 and pc.minutes("1h30m") == 90 and pc.minutes("") is None
    assert pc.minutes("10 minutes") is None


def test_the_docs_show_the_table() -> None:
    text = DOC.read_text(encoding="utf-8")
    start, end = "<!-- api-preconditions -->\n", "\n<!-- /api-preconditions -->"
    assert text.split(start, 1)[1].split(end, 1)[0] == pc.preconditions_table()


def test_every_row_cites_a_source() -> None:
    for row in pc.PRECONDITIONS:
        assert row.source.startswith("https://") or "terraform-provider" in row.source, row.name
        assert row.rule and row.calls and row.types, row.name


def test_the_example_stacks_cover_each_precondition_type() -> None:
    # A row whose types no example registers would check nothing.
    registered = {x.type for _, r in every_example() for x in r.resources}
    for row in pc.PRECONDITIONS:
        assert set(row.types) & registered, f"{row.name}: no example stack registers {row.types}"
    assert stack_id(CLUSTER) == "aws-cluster-4x8"


def test_an_s3_object_with_more_than_ten_tags_is_caught() -> None:
    r = example(BAKING)
    (tools,) = [x for x in r.of_type("aws:s3/bucketObjectv2:BucketObjectv2") if x.name.endswith("-tools")]
    assert len(tools.inputs["tags"]) <= 10
    found = pc.violations(edited(r, "aws:s3/bucketObjectv2:BucketObjectv2",
                                 lambda o: o.inputs["tags"].update({f"k{i}": "v" for i in range(11)})))
    assert [n for n, _ in found] == ["s3-object-tag-limit"]
    assert "tags on an S3 object (PutObject fails with InvalidTag); at most 10" in found[0][1]


def test_a_persistent_request_that_terminates_or_ends_in_local_time_is_caught() -> None:
    r = example(BAKING)
    (inst,) = r.of_type("aws:ec2/instance:Instance")
    assert inst.inputs["instanceMarketOptions"]["spotOptions"]["spotInstanceType"] == "persistent"

    def terminating(i: CapturedResource) -> None:
        i.inputs["instanceMarketOptions"]["spotOptions"].update(instanceInterruptionBehavior="terminate",
                                                                 validUntil="2026-12-01 16:00")

    found = pc.violations(edited(r, "aws:ec2/instance:Instance", terminating))
    assert found == [
        ("persistent-spot-stop", f"{inst.name}: a persistent spot request with interruption behaviour 'terminate'; "
         "RunInstances accepts stop or hibernate"),
        ("persistent-spot-stop", f"{inst.name}: validUntil '2026-12-01 16:00' is not YYYY-MM-DDTHH:MM:SSZ (UTC)"),
    ]
