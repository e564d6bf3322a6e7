"""The ``policies/`` folder is a self-contained, publishable pack: its generated copy of the shared model matches
the source, and the folder alone, in a fresh virtualenv with only its ``requirements.txt``, serves the same
verdicts over gRPC as the pack gives in this repository."""

from __future__ import annotations

import json
import select
import shutil
import subprocess
import sys
import venv
from pathlib import Path

import grpc
import pulumi_aws as aws
import pytest
from google.protobuf import empty_pb2
from pulumi.runtime.proto import analyzer_pb2, analyzer_pb2_grpc

from gpulease.review import policy_runner
from gpulease.review.render import render
from policies.guardrails import pack, taggable
from tools import vendor_pack

ROOT = Path(__file__).resolve().parents[2]


def test_the_vendored_core_is_the_source_byte_for_byte() -> None:
    # A change to gpulease/core needs `make vendor` (tools/vendor_pack.py) in the same commit.
    assert vendor_pack.stale() == []
    assert vendor_pack.core_files(vendor_pack.CORE_COPY)  # not vacuous


def test_the_generated_taggable_table_agrees_with_the_sdks() -> None:
    table = taggable.generated_taggable_types()
    assert len(table) > 800
    sample = [*sorted(table)[::60], "aws:ec2/instance:Instance", "alicloud:ecs/instance:Instance",
              "aws:autoscaling/group:Group", "aws:s3/bucket:Bucket"]
    for token in sample:
        assert token in table and taggable.is_taggable(token), token
    for token in ("aws:s3/bucketPolicy:BucketPolicy", "aws:ec2/volumeAttachment:VolumeAttachment",
                  "alicloud:ecs/diskAttachment:DiskAttachment", "aws:iam/rolePolicy:RolePolicy"):
        assert token not in table and not taggable.is_taggable(token), token


def _gpu_program() -> None:
    bucket = aws.s3.Bucket("data")
    aws.ec2.Instance("trainer", ami="ami-12345678", instance_type="g5.xlarge", tags={"team": "ml"})
    aws.s3.BucketPolicy("open", bucket=bucket.id, policy=json.dumps({
        "Version": "2012-10-17",
        "Statement": [{"Effect": "Allow", "Principal": "*", "Action": "s3:GetObject", "Resource": "*"}]}))


def _requests(rendering):
    providers = policy_runner._ProviderInfo(rendering)
    resource_requests = []
    for res in rendering.custom_resources:
        request = analyzer_pb2.AnalyzeRequest(type=res.type, urn=res.urn, name=res.name,
                                              options=policy_runner._options(res), provider=providers.of(res))
        request.properties.CopyFrom(policy_runner._struct(res.input_struct, res.inputs))
        resource_requests.append(request)
    stack = analyzer_pb2.AnalyzeStackRequest(
        resources=[policy_runner._stack_resource(r, providers) for r in rendering.resources])
    return resource_requests, stack


def _verdicts(analyzer, rendering) -> set[tuple[str, str, int]]:
    analyzer.ConfigureStack(analyzer_pb2.AnalyzerStackConfigureRequest(
        stack=rendering.stack, project=rendering.project, organization="organization", dry_run=True))
    resource_requests, stack = _requests(rendering)
    found = set()
    for response in [*(analyzer.Analyze(r) for r in resource_requests), analyzer.AnalyzeStack(stack)]:
        found |= {(d.policyName, d.urn.rpartition("::")[2], d.enforcementLevel) for d in response.diagnostics}
    return found


class _Local:
    """The SDK's servicer in this process, called as the gRPC stub is."""

    def __init__(self) -> None:
        self.servicer = policy_runner.check_sdk_shape()(
            pack.PACK_NAME, policy_runner.PACK_VERSION, pack.all_policies(), pack.PACK_ENFORCEMENT, None,
            pack.PACK_DESCRIPTION, pack.PACK_DISPLAY_NAME, None, None, None, None)

    def __getattr__(self, name):
        return lambda request: getattr(self.servicer, name)(request, None)


@pytest.fixture(scope="module")
def published_pack(tmp_path_factory) -> Path:
    """The pack folder alone, copied as `pulumi policy publish` would upload it, with a fresh virtualenv holding
    only its requirements.txt (installed from pip's configured sources and cache, as `make setup` does)."""
    folder = tmp_path_factory.mktemp("published") / "gpulease-guardrails"
    shutil.copytree(ROOT / "policies", folder, ignore=shutil.ignore_patterns("__pycache__", "venv"))
    venv.EnvBuilder(with_pip=True).create(folder / "venv")
    python = folder / "venv" / "bin" / "python"
    subprocess.run([str(python), "-m", "pip", "install", "--quiet", "-r", str(folder / "requirements.txt")],
                   check=True, timeout=600, cwd=folder)
    return folder


def test_the_pack_folder_alone_imports_nothing_from_outside(published_pack: Path) -> None:
    python = published_pack / "venv" / "bin" / "python"
    probe = (
        "import runpy, sys, json\n"
        "import pulumi_policy\n"
        "pulumi_policy.PolicyPack = lambda **kwargs: None  # build the pack, do not serve it\n"
        "runpy.run_path('__main__.py', run_name='__main__')\n"
        "print(json.dumps(sorted({getattr(m, '__file__', None) or '' for m in list(sys.modules.values())})))\n"
    )
    # -I: no PYTHONPATH, no user site, not even the working directory on the path.
    out = subprocess.run([str(python), "-I", "-c", probe], cwd=published_pack, check=True, capture_output=True,
                         text=True, timeout=120).stdout
    files = [f for f in json.loads(out) if f]
    base = sys.base_prefix
    outside = [f for f in files if not f.startswith((str(published_pack), base))]
    assert outside == []
    assert any("_vendor/gpulease/core/" in f for f in files)  # the generated copy, not this repository's
    assert not any(f.startswith(str(ROOT)) for f in files)


def test_the_published_pack_serves_the_same_verdicts_over_grpc(published_pack: Path) -> None:
    rendering = render({"aws:region": "us-east-1"}, program=_gpu_program)
    assert rendering.error is None
    expected = _verdicts(_Local(), rendering)
    assert {"budget-tags", "bucket-policy-public"} & {name for name, _, _ in expected}
    python = published_pack / "venv" / "bin" / "python"
    # -u: unbuffered, as the Pulumi CLI runs it (the port is written without a flush).
    server = subprocess.Popen([str(python), "-u", "-I", "__main__.py"], cwd=published_pack, stdout=subprocess.PIPE,
                              stderr=subprocess.PIPE)
    try:
        ready, _, _ = select.select([server.stdout], [], [], 120)
        assert ready, "the analyzer did not print its port"
        port = int(server.stdout.readline())  # the analyzer prints its port, as the Pulumi CLI reads it
        with grpc.insecure_channel(f"127.0.0.1:{port}") as channel:
            stub = analyzer_pb2_grpc.AnalyzerStub(channel)
            info = stub.GetAnalyzerInfo(empty_pb2.Empty(), timeout=60)
            assert info.name == pack.PACK_NAME and len(info.policies) == len(pack.all_policies())
            assert _verdicts(_GrpcCalls(stub), rendering) == expected
    finally:
        server.kill()
        server.wait()


class _GrpcCalls:
    def __init__(self, stub) -> None:
        self.stub = stub

    def __getattr__(self, name):
        return lambda request: getattr(self.stub, name)(request, timeout=60)
