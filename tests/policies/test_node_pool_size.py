"""An ACK node pool that names no size is of unknown size (pulumi_alicloud documents no default), never 0 nodes;
a scaling config with max_size and enable unset may scale to max_size."""

from __future__ import annotations

from gpulease.core import resources as rt
from gpulease.core.compute import UNKNOWN, Registered, unit_of
from gpulease.core.cost import estimate_resources


def _capacity(props: dict) -> object:
    res = Registered(type=rt.ALI_NODE_POOL, name="pool", urn="urn:pool", props=props)
    unit = unit_of(res, [res])
    assert unit is not None
    return unit.capacity


def test_the_size_of_a_node_pool_follows_what_it_names_and_is_unknown_otherwise():
    gpu = {"instanceTypes": ["ecs.gn7i-c8g1.2xlarge"]}
    assert _capacity(gpu) is UNKNOWN
    assert _capacity({**gpu, "scalingConfig": {"maxSize": 6, "minSize": 1}}) == 6
    assert _capacity({**gpu, "scalingConfig": {"enable": False, "maxSize": 6}, "desiredSize": "2"}) == 2
    assert _capacity({**gpu, "scalingConfig": {"enable": True, "maxSize": 4}}) == 4
    assert _capacity({**gpu, "nodeCount": 3}) == 3


def test_a_node_pool_of_unknown_size_makes_the_worst_case_unknown_never_zero():
    cost = estimate_resources([(rt.ALI_NODE_POOL, {"instanceTypes": ["ecs.gn7i-c8g1.2xlarge"]})], region="cn-hangzhou")
    assert cost.worst_case_known is False
    assert "the size of the ACK node pool is unknown (it names no size" in (cost.worst_case_reason or "")
