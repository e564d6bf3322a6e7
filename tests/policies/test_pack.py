"""The pack as a whole: it loads as a Pulumi policy pack, the analyzer path behaves like the CLI's, every example
stack passes and a hand-written program fails with exactly the expected violations."""

from __future__ import annotations

import gc
import io
import re
import runpy
import sys
from pathlib import Path

import pytest
import yaml
from pulumi.runtime.proto import analyzer_pb2, analyzer_pb2_grpc
from pulumi_policy import EnforcementLevel, ResourceValidationPolicy

from gpulease.review import policy_runner
from gpulease.review.engine import render_target
from gpulease.review.policy_runner import PolicyConfigError, PolicyRunner, check_sdk_shape
from gpulease.review.render import render_stack_file
from policies.guardrails import pack
from tests.support.paths import ROOT, STACKS_DIR
from tests.support.policy import AWS_INSTANCE, NOW, UNKNOWN, analyze, aws_gpu, found, res, stack

EXPECTED_POLICIES = {
    "max-runtime": "mandatory",
    "max-runtime-cloud-stop": "mandatory",
    "budget-tags": "mandatory",
    "budget-worst-case": "mandatory",
    "budget-unpriced": "advisory",
    "budget-prices-fresh": "advisory",
    "spot-only-with-checkpointing": "mandatory",
    "spot-checkpoint-bucket": "mandatory",
    "ssh-ingress-restricted": "mandatory",
    "encrypted-storage": "mandatory",
    "bucket-public-access-blocked": "mandatory",
    "bucket-lifecycle-required": "advisory",
    "data-disk-retained": "mandatory",
    "imdsv2-required": "mandatory",
    "no-secrets-in-user-data": "mandatory",
    "bucket-policy-public": "mandatory",
    "instance-role-wildcard": "mandatory",
    "public-ip-unneeded": "advisory",
    "data-source-no-credentials": "mandatory",
    "data-source-same-region": "advisory",
    "budget-alert": "mandatory",
    "verify-long-run": "advisory",
    "unjudged-gpu-compute": "mandatory",
    "unseen-compute-types": "mandatory",
}


class _StubServer:
    def __init__(self):
        self.started = False
        self.stopped = False

    def add_insecure_port(self, address: str) -> int:
        assert address == "127.0.0.1:0"
        return 50123

    def start(self) -> None:
        self.started = True

    def stop(self, grace) -> None:
        self.stopped = True


def test_main_builds_the_policy_pack_with_the_server_stubbed(monkeypatch):
    server = _StubServer()
    servicers = []
    monkeypatch.setattr("grpc.server", lambda *a, **kw: server)
    monkeypatch.setattr(analyzer_pb2_grpc, "add_AnalyzerServicer_to_server", lambda s, _: servicers.append(s))

    def interrupt(_seconds):
        raise KeyboardInterrupt  # the constructor serves until interrupted; end it here

    monkeypatch.setattr("time.sleep", interrupt)
    out = io.BytesIO()
    monkeypatch.setattr(sys, "stdout", io.TextIOWrapper(out))
    runpy.run_path(str(ROOT / "policies" / "__main__.py"), run_name="__main__")
    sys.stdout.flush()
    assert out.getvalue() == b"50123\n"  # the port handshake the Pulumi CLI reads
    assert server.started and server.stopped
    (servicer,) = servicers
    # The pack's own servicer is served (one conversion per resource), and the SDK's name is given back after.
    assert type(servicer).__name__ == "ServedServicer"
    assert gc.get_freeze_count() > 10_000  # the collector is kept off what the process holds for good
    gc.unfreeze()
    assert policy_runner.check_sdk_shape().__name__ == "_PolicyAnalyzerServicer"
    info = servicer.GetAnalyzerInfo(None, None)
    assert info.name == "gpulease-guardrails"
    levels = {p.name: policy_runner.LEVEL_NAMES[p.enforcementLevel] for p in info.policies}
    assert levels == EXPECTED_POLICIES
    for p in info.policies:
        assert p.description, p.name
        assert p.HasField("configSchema"), f"{p.name} has no config schema"


def test_policy_pack_yaml_keeps_its_virtualenv_inside_the_pack_folder():
    meta = yaml.safe_load((ROOT / "policies" / "PulumiPolicy.yaml").read_text())
    assert meta["runtime"]["name"] == "python"
    assert meta["runtime"]["options"]["virtualenv"] == "venv"  # `pulumi policy publish` uploads the folder alone


def test_the_packs_requirements_are_pinned_as_the_repository_pins_them():
    def pins(path):
        lines = [line.split("#")[0].strip() for line in path.read_text().splitlines()]
        return dict(line.lower().replace("_", "-").split("==") for line in lines if line)

    pack_pins, constraints = pins(ROOT / "policies" / "requirements.txt"), pins(ROOT / "constraints.txt")
    assert set(pack_pins) == {"pulumi", "pulumi-policy", "pydantic", "pyyaml"}
    assert all(constraints[name] == version for name, version in pack_pins.items())


def test_sdk_shape_is_the_pinned_one():
    """Fails loudly when pulumi-policy changes what gpulease/review/policy_runner.py drives."""
    servicer = check_sdk_shape()
    assert servicer.__name__ == "_PolicyAnalyzerServicer"
    pins = [line for line in (ROOT / "requirements.txt").read_text().splitlines() if line.startswith("pulumi-policy")]
    assert pins == [f"pulumi-policy=={policy_runner.PINNED_SDK_VERSION}"]
    fields = {f.name for f in analyzer_pb2.AnalyzeDiagnostic.DESCRIPTOR.fields}
    assert {"policyName", "enforcementLevel", "message", "urn"} <= fields
    fields = {f.name for f in analyzer_pb2.AnalyzerResource.DESCRIPTOR.fields}
    assert {"properties", "options", "parent", "dependencies", "propertyDependencies"} <= fields


def test_sdk_shape_change_is_reported(monkeypatch):
    monkeypatch.setattr(policy_runner, "SERVICER_PARAMETERS", ("self", "name"))
    with pytest.raises(policy_runner.SdkShapeError, match=r"_PolicyAnalyzerServicer\.__init__ takes"):
        PolicyRunner()
    monkeypatch.undo()
    monkeypatch.setattr(policy_runner, "PINNED_SDK_VERSION", "0.0.0")
    with pytest.raises(policy_runner.SdkShapeError, match=r"this runner is pinned to 0\.0\.0"):
        check_sdk_shape()


def test_unknown_values_behave_as_during_preview():
    """A rule that reads an unknown value is reported by the SDK as advisory "can't run ... during preview"."""

    def strict(args, report):
        if args.props["instanceType"].startswith("g"):
            report("GPU")

    policy = ResourceValidationPolicy("strict", "Reads instanceType directly.", validate=strict,
                                      enforcement_level=EnforcementLevel.MANDATORY)
    runner = PolicyRunner(policies=[policy])
    known = runner.analyze(stack(res(AWS_INSTANCE, "a", aws_gpu())), now=NOW)
    assert [(x.policy, x.level, x.detail) for x in known.violations] == [("strict", "mandatory", "GPU")]
    unknown = runner.analyze(stack(res(AWS_INSTANCE, "a", aws_gpu(instanceType=UNKNOWN))), now=NOW)
    assert [(x.policy, x.level, x.message) for x in unknown.violations] == [
        ("strict", "advisory", "can't run policy 'strict' from policy pack 'gpulease-guardrails@v0.1.0' during "
         "preview: string value at .instanceType can't be known during preview")
    ]


def test_config_levels_all_then_per_policy():
    bare = res(AWS_INSTANCE, "gpu", aws_gpu(instanceMarketOptions=None, tags={}))
    levels = {h[0]: h[1] for h in found(analyze(bare, config={"all": "advisory", "budget-tags": "mandatory"}))}
    assert levels["budget-tags"] == "mandatory"
    assert levels["spot-only-with-checkpointing"] == "advisory"
    assert levels["max-runtime"] == "advisory"
    disabled = found(analyze(bare, config={"all": "disabled"}))
    assert disabled == []


@pytest.mark.parametrize(
    ("config", "message"),
    [
        ({"all": "strict"}, "all: 'strict' is not an enforcement level; accepted: advisory, mandatory, remediate"),
        ({"no-such-rule": "advisory"}, "no policy 'no-such-rule' in the pack; known: max-runtime,"),
        ({"max-runtime": {"maxHours": "lots"}}, "max-runtime: maxHours: 'lots' is not of type 'number'"),
        ({"ssh-ingress-restricted": {"ports": [70000]}}, "ssh-ingress-restricted: ports.0: 70000 is greater than"),
        ({"budget-tags": 3}, "budget-tags: expected a level or an object, got 3"),
    ],
)
def test_invalid_policy_config_is_refused(config, message):
    with pytest.raises(PolicyConfigError, match="policy config: ") as err:
        PolicyRunner(config=config)
    assert message in str(err.value)


def example_stacks() -> list[Path]:
    return sorted(STACKS_DIR.glob("Pulumi.*.yaml"))


@pytest.mark.parametrize("stack_file", example_stacks(), ids=lambda p: p.stem.removeprefix("Pulumi."))
def test_every_example_stack_passes(stack_file):
    rendering = render_stack_file(stack_file, now=NOW)
    assert rendering.error is None
    assert any(r.custom for r in rendering.resources)
    result = PolicyRunner().analyze(rendering, now=NOW)
    # Clean but for one advisory: at NOW the shipped catalog's prices (2025-06-01) are older than 30 days; and the
    # stacks in ssm / cloud-assistant mode (no inbound rule) keep a public address for egress: advised against.
    sessions = next((m.group(1) for m in [re.search(r"mode: (ssm|cloud-assistant)", stack_file.read_text())] if m), None)
    expected = [("budget-prices-fresh", "advisory", None)]
    if sessions in ("ssm", "cloud-assistant"):
        instance = next(r.name for r in rendering.resources if r.type.endswith("/instance:Instance"))
        expected.append(("public-ip-unneeded", "advisory", instance))
    assert sorted((x.policy, x.level, x.resource_name) for x in result.violations) == sorted(expected, key=str)
    assert "2025-06-01 (548 days old)" in result.violations[0].detail


def test_every_rule_module_is_in_the_pack():
    helpers = {"__init__", "common", "pack", "buckets", "taggable", "deadlines", "servicer", "way_out"}  # no rules of their own
    modules = {p.stem for p in (ROOT / "policies" / "guardrails").glob("*.py")} - helpers
    assert modules == {m.__name__.rsplit(".", 1)[-1] for m in pack.RULE_MODULES}
    assert [p.name for p in pack.all_policies()] == list(EXPECTED_POLICIES)


def test_type_routing_gives_the_same_verdicts_as_every_rule_on_every_resource():
    """gpulease plan (and the published pack) hand each rule only the types it reads, converting each resource
    once; the SDK's own servicer hands every rule everything, converting per rule: the same verdicts."""
    from gpulease.review.policy_runner import check_sdk_shape
    from tests.support import policy as s

    handwritten = render_target(s.HANDWRITTEN, s.HANDWRITTEN / "Pulumi.dev.yaml", now=NOW)
    bags = [
        handwritten,
        stack(*s.compliant_aws_stack()),
        stack(res(AWS_INSTANCE, "odd", aws_gpu(instanceMarketOptions=None, metadataOptions=None, tags={},
                                               userData="AKIAIOSFODNN7EXAMPLE")),
              res("aws:ec2/securityGroupRule:SecurityGroupRule", "r", {"type": "ingress", "protocol": "-1",
                                                                       "cidrBlocks": ["0.0.0.0/0"]}),
              res("aws:ebs/volume:Volume", "v", {"size": 1})),
        stack(s.res(s.AWS_INSTANCE, "gpu", s.aws_gpu()), s.aws_schedule_for("gpu", 9), *s.checkpoint_bucket()[:2]),
        stack(s.res(s.ALI_INSTANCE, "gpu", s.ali_gpu(autoReleaseTime=None, systemDiskEncrypted=False)),
              s.res("alicloud:oss/bucket:Bucket", "ali-ckpt", {"bucket": "ali-ckpt", "acl": "public-read"})),
    ]
    routed = PolicyRunner()
    everything = PolicyRunner(servicer_class=check_sdk_shape(), narrow=False)
    counts = []
    examples = [render_stack_file(f, now=NOW) for f in example_stacks()]
    for bag in [*bags, *examples]:
        a = routed.analyze(bag, now=NOW)
        b = everything.analyze(bag, now=NOW)
        assert sorted((x.policy, x.level, x.urn, x.message, x.stage) for x in a.violations) == sorted(
            (x.policy, x.level, x.urn, x.message, x.stage) for x in b.violations)
        assert sorted(a.not_applicable) == sorted(b.not_applicable)
        counts.append(len(a.violations))
    assert counts[0] == 15 and counts[1] == 1 and all(n >= 3 for n in counts[2:len(bags)])  # stale-price advisory
    assert len(examples) >= 11 and all(n >= 1 for n in counts[len(bags):])
