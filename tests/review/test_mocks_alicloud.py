"""The Alibaba Cloud mocks answer under the tokens pulumi-alicloud really uses, with ids shaped like real ones."""

from __future__ import annotations

import re
from pathlib import Path

import pulumi_alicloud

from gpulease.review import mock_registry, mocks, mocks_alicloud
from policies.guardrails.taggable import resource_class
from tests.support.alicloud import ali_experiment, render_ali

SDK_ROOT = Path(pulumi_alicloud.__file__).parent


def _sdk_invoke_tokens() -> set[str]:
    tokens: set[str] = set()
    for path in SDK_ROOT.rglob("get_*.py"):
        tokens |= set(re.findall(r"invoke\('(alicloud:[^']+)'", path.read_text()))
    return tokens


def test_invoke_tokens_are_the_sdks() -> None:
    ours = {t for t in mocks.CALLS if t.startswith("alicloud:")}
    assert ours >= {
        "alicloud:index/getZones:getZones",
        "alicloud:ecs/getImages:getImages",
        "alicloud:index/getAccount:getAccount",
        "alicloud:ecs/getEcsDisks:getEcsDisks",
        "alicloud:vpc/getSwitches:getSwitches",
    }
    assert ours <= _sdk_invoke_tokens()


def test_resource_tokens_are_the_sdks() -> None:
    for token in (t for t in mock_registry.RESOURCES if t.startswith("alicloud:")):
        cls = resource_class(token)
        assert cls is not None, token
        # The class registers itself under exactly this token.
        source = Path(__import__(cls.__module__, fromlist=["_"]).__file__).read_text()
        assert f"'{token}'" in source, token


def test_every_resource_the_component_registers_has_a_realistic_mock() -> None:
    r = render_ali(ali_experiment())
    registered = {x.type for x in r.custom_resources if x.type.startswith("alicloud:")}
    assert registered <= set(mock_registry.RESOURCES), registered - set(mock_registry.RESOURCES)
    ids = {x.type: x.id for x in r.custom_resources}
    assert re.fullmatch(r"i-bp1[0-9a-f]{17}", ids["alicloud:ecs/instance:Instance"])
    assert re.fullmatch(r"d-bp1[0-9a-f]{17}", ids["alicloud:ecs/ecsDisk:EcsDisk"])
    assert re.fullmatch(r"vpc-bp1[0-9a-f]{17}", ids["alicloud:vpc/network:Network"])
    assert re.fullmatch(r"vsw-bp1[0-9a-f]{17}", ids["alicloud:vpc/switch:Switch"])
    assert re.fullmatch(r"sg-bp1[0-9a-f]{17}", ids["alicloud:ecs/securityGroup:SecurityGroup"])
    disk, instance = ids["alicloud:ecs/ecsDisk:EcsDisk"], ids["alicloud:ecs/instance:Instance"]
    assert ids["alicloud:ecs/ecsDiskAttachment:EcsDiskAttachment"] == f"{disk}:{instance}"


def test_zone_lookup_narrows_large_gpu_types_like_real_regions() -> None:
    m = mocks.CloudMocks(region="ap-southeast-1")
    everything = mocks_alicloud._ali_zones(m, {"availableInstanceType": "ecs.gn7i-c8g1.2xlarge"})["ids"]
    a100 = mocks_alicloud._ali_zones(m, {"availableInstanceType": "ecs.gn7e-c16g1.4xlarge"})["ids"]
    assert everything == ["ap-southeast-1a", "ap-southeast-1b", "ap-southeast-1c"]
    assert set(a100) < set(everything) and a100
