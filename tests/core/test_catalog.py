"""The instance catalog: shipped data, validation errors that point at the row, overrides, type resolution."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from gpulease.core.catalog import OVERRIDES_ENV, CatalogError, load_catalog
from gpulease.core.sizing.resolve import GpuSpec, resolve_instance_type

REQUIRED_TYPES = {
    "aws": ("g4dn.xlarge", "g5.xlarge", "g6.xlarge", "g6e.xlarge", "p4de.24xlarge", "p5.48xlarge"),
    "alicloud": ("ecs.gn6i-c4g1.xlarge", "ecs.gn7i-c8g1.2xlarge", "ecs.gn7e-c16g1.4xlarge"),
}
FAMILIES = {
    "aws": ("g4dn", "g5", "g6", "g6e", "p3", "p4d", "p4de", "p5"),
    "alicloud": ("gn6i", "gn6v", "gn7i", "gn7e", "gn8is"),
}

VALID_ROW = (
    "  - {cloud: aws, type: g9.xlarge, gpuModel: X1, gpuCount: 1, gpuMemoryGb: 32, memoryBandwidthGbps: 1000,\n"
    "     interconnect: pcie, vcpu: 4, ramGb: 16, prices: {us-east-1: 0.5, us-west-2: 0.5}, spotDiscount: 0.5,\n"
    "     asOf: 2026-01-01, source: 'https://example.com/prices'}\n"
)


def _family(cloud: str, instance_type: str) -> str:
    if cloud == "aws":
        return instance_type.split(".")[0]
    return re.match(r"^ecs\.([a-z0-9]+)", instance_type).group(1)


def test_shipped_catalog_keeps_the_rows_the_components_use():
    catalog = load_catalog()
    for cloud, types in REQUIRED_TYPES.items():
        for name in types:
            assert catalog.get(cloud, name) is not None, name


@pytest.mark.parametrize("cloud", ["aws", "alicloud"])
def test_every_family_is_present_with_prices_in_two_regions_and_dated_sources(cloud):
    catalog = load_catalog()
    rows = [it for it in catalog.instances if it.cloud == cloud]
    assert {_family(cloud, it.type) for it in rows} >= set(FAMILIES[cloud])
    for it in rows:
        assert len(it.prices) >= 2, it.type
        assert it.source in catalog.sources, it.type
        assert catalog.sources[it.source].url.startswith("https://")
        assert it.as_of.year >= 2024
        # Every priced region also has storage and network prices, so a stack there is fully costed.
        for region in it.prices:
            assert catalog.region_prices(cloud, region) is not None, (it.type, region)


def test_interconnect_and_bandwidth_match_the_hardware():
    catalog = load_catalog()
    p5 = catalog.get("aws", "p5.48xlarge")
    assert (p5.gpu_model, p5.gpu_count, p5.gpu_memory_gb, p5.interconnect) == ("H100", 8, 80, "nvlink")
    assert p5.memory_bandwidth_gbps > catalog.get("aws", "p4de.24xlarge").memory_bandwidth_gbps
    g5 = catalog.get("aws", "g5.48xlarge")
    assert (g5.gpu_count, g5.interconnect) == (8, "pcie")
    t4 = catalog.get("alicloud", "ecs.gn6i-c4g1.xlarge")
    assert (t4.gpu_model, t4.gpu_memory_gb) == ("T4", 16)


def test_region_prices_cover_disks_ip_objects_and_egress():
    us = load_catalog().region_prices("aws", "us-east-1")
    assert us.disk_gb_month("gp3") == 0.08
    assert us.public_ipv4_hour == 0.005
    assert us.object_storage_gb_month == 0.023 and us.egress_gb == 0.09 and us.snapshot_gb_month == 0.05
    ali = load_catalog().region_prices("alicloud", "cn-hangzhou")
    # An ESSD's performance level selects its own price; PL1 is the plain category.
    assert ali.disk_gb_month("cloud_essd", "PL2") == ali.block_storage_gb_month["cloud_essd_pl2"]
    assert ali.disk_gb_month("cloud_essd", "PL1") == ali.block_storage_gb_month["cloud_essd"]


def _write(tmp_path: Path, text: str, name: str = "override.yaml") -> Path:
    path = tmp_path / name
    path.write_text(text)
    return path


def test_malformed_row_names_the_file_line_and_row(tmp_path):
    bad = VALID_ROW.replace("gpuCount: 1", "gpuCount: 0")
    path = _write(tmp_path, "instances:\n" + VALID_ROW.replace("g9.xlarge", "g9.2xlarge") + bad)
    with pytest.raises(CatalogError) as err:
        load_catalog([path])
    message = str(err.value)
    assert str(path) in message
    assert "line 5" in message and "instances[1]" in message and "g9.xlarge" in message
    assert "gpuCount" in message and "greater than or equal to 1" in message


@pytest.mark.parametrize(
    ("change", "expected"),
    [
        (("interconnect: pcie", "interconnect: infiniband"), "interconnect"),
        (("prices: {us-east-1: 0.5, us-west-2: 0.5}", "prices: {us-east-1: -1}"), "prices must be at least 1e-06"),
        (("spotDiscount: 0.5", "spotDiscount: 1.5"), "spotDiscount"),
        (("ramGb: 16,", "ramGb: 16, color: red,"), "color: unknown field"),
        (("source: 'https://example.com/prices'", "source: nowhere"), "neither a key of 'sources'"),
    ],
)
def test_each_kind_of_bad_value_is_reported(tmp_path, change, expected):
    path = _write(tmp_path, "instances:\n" + VALID_ROW.replace(*change))
    with pytest.raises(CatalogError, match=re.escape(expected)):
        load_catalog([path])


def test_new_rows_must_be_complete(tmp_path):
    path = _write(tmp_path, "instances:\n  - {cloud: aws, type: g9.xlarge, gpuModel: X1}\n")
    with pytest.raises(CatalogError, match=r"g9\.xlarge.*gpuCount: is required"):
        load_catalog([path])


def test_not_yaml_and_unknown_sections_are_refused(tmp_path):
    with pytest.raises(CatalogError, match="not valid YAML"):
        load_catalog([_write(tmp_path, "instances: [\n")])
    with pytest.raises(CatalogError, match=r"unknown top-level key.*instance_types"):
        load_catalog([_write(tmp_path, "instance_types: []\n")])
    with pytest.raises(CatalogError, match="does not exist"):
        load_catalog([tmp_path / "missing.yaml"])


def test_override_merges_prices_into_a_known_row_and_adds_new_rows(tmp_path):
    path = _write(
        tmp_path,
        "instances:\n"
        "  - {cloud: aws, type: g5.xlarge, prices: {us-east-1: 0.9, ap-south-1: 1.2}}\n" + VALID_ROW,
    )
    base = load_catalog([])
    merged = load_catalog([path])
    g5 = merged.get("aws", "g5.xlarge")
    assert g5.prices["us-east-1"] == 0.9 and g5.prices["ap-south-1"] == 1.2
    assert g5.prices["us-west-2"] == base.get("aws", "g5.xlarge").prices["us-west-2"]  # untouched region kept
    assert g5.gpu_model == "A10G"  # untouched field kept
    assert merged.get("aws", "g9.xlarge").gpu_memory_gb == 32
    assert base.get("aws", "g9.xlarge") is None
    assert merged.files[-1] == str(path)


def test_override_from_the_environment_reaches_resolution(tmp_path, monkeypatch):
    # Make the new type the cheapest 32 GB-or-more GPU in us-east-1.
    path = _write(tmp_path, "instances:\n" + VALID_ROW)
    gpu = GpuSpec.model_validate({"gpuMemoryGb": 30})
    assert resolve_instance_type("aws", "us-east-1", gpu).type == "g6e.xlarge"
    monkeypatch.setenv(OVERRIDES_ENV, str(path))
    assert resolve_instance_type("aws", "us-east-1", gpu).type == "g9.xlarge"


def test_requirements_pick_the_cheapest_type_meeting_them():
    gpu = GpuSpec.model_validate({"gpuMemoryGb": 24, "count": 1})
    # g6.xlarge (L4, 0.8048) is cheaper than g5.xlarge (A10G, 1.006) in us-east-1.
    assert resolve_instance_type("aws", "us-east-1", gpu).type == "g6.xlarge"
    gpu = GpuSpec.model_validate({"gpuMemoryGb": 24, "model": "A10G"})
    assert resolve_instance_type("aws", "us-east-1", gpu).type == "g5.xlarge"
    gpu = GpuSpec.model_validate({"gpuMemoryGb": 80, "count": 8})
    assert resolve_instance_type("aws", "us-east-1", gpu).type == "p4de.24xlarge"


def test_unknown_and_inconsistent_instance_types_are_clear_errors():
    with pytest.raises(CatalogError, match=r"gpu\.instanceType: 'g5\.99xlarge' is not in the aws catalog; known: .*g5\.xlarge"):
        resolve_instance_type("aws", "us-east-1", GpuSpec.model_validate({"instanceType": "g5.99xlarge"}))
    with pytest.raises(CatalogError, match=r"gpu\.count: g5\.xlarge has 1 GPU\(s\), not 4"):
        resolve_instance_type("aws", "us-east-1", GpuSpec.model_validate({"instanceType": "g5.xlarge", "count": 4}))


def test_no_offer_names_the_requirement_and_the_priced_regions():
    gpu = GpuSpec.model_validate({"gpuMemoryGb": 24})
    with pytest.raises(CatalogError, match=r"no aws instance type in mars-1 .*prices aws in: .*us-east-1"):
        resolve_instance_type("aws", "mars-1", gpu)
    with pytest.raises(CatalogError, match=r"offers 1 x GPU with >= 200 GB"):
        resolve_instance_type("aws", "us-east-1", GpuSpec.model_validate({"gpuMemoryGb": 200}))


def test_request_errors_carry_the_spec_field_for_callers():
    with pytest.raises(CatalogError) as err:
        resolve_instance_type("aws", "us-east-1", GpuSpec.model_validate({"gpuMemoryGb": 200}))
    assert err.value.field == "gpu" and err.value.detail.startswith("no aws instance type in us-east-1")
    assert str(err.value) == f"gpu: {err.value.detail}"
