"""The mocks answer the common lookups of both providers in their result shapes, and a lookup they cannot answer
stops the program there with the call and the program's file:line, what it registered before still reviewed."""

from __future__ import annotations

import contextlib
import json
from pathlib import Path

import pulumi_alicloud as ali
import pulumi_aws as aws
import pytest

from gpulease.cli import main
from gpulease.review import mocks
from gpulease.review.mock_ids import ACCOUNT_ID
from gpulease.review.render import render


def _run(config: dict, lookups) -> tuple[dict, object]:
    got: dict = {}

    def program() -> None:
        got.update(lookups())

    rendering = render(config, program=program)
    return got, rendering


def test_aws_account_region_and_network_lookups_answer_for_the_stacks_region() -> None:
    def lookups() -> dict:
        vpc = aws.ec2.get_vpc(default=True)
        return {
            "zones": aws.get_availability_zones(state="available"),
            "region": aws.get_region(),
            "partition": aws.get_partition(),
            "me": aws.get_caller_identity(),
            "vpc": vpc,
            "subnets": aws.ec2.get_subnets(filters=[aws.ec2.GetSubnetsFilterArgs(name="vpc-id", values=[vpc.id])]),
            "zone": aws.route53.get_zone(name="example.com"),
        }

    got, rendering = _run({"aws:region": "eu-west-1"}, lookups)
    assert rendering.error is None
    assert got["zones"].names == ["eu-west-1a", "eu-west-1b", "eu-west-1c"]
    assert len(got["zones"].zone_ids) == 3 and all(z.startswith("euw1-az") for z in got["zones"].zone_ids)
    assert got["region"].name == "eu-west-1"
    assert (got["partition"].partition, got["partition"].dns_suffix) == ("aws", "amazonaws.com")
    assert got["me"].account_id == ACCOUNT_ID and got["me"].arn.startswith(f"arn:aws:iam::{ACCOUNT_ID}:")
    assert got["vpc"].id.startswith("vpc-") and got["vpc"].cidr_block == "172.31.0.0/16" and got["vpc"].default
    assert len(got["subnets"].ids) == 3 and all(s.startswith("subnet-") for s in got["subnets"].ids)
    assert got["zone"].name == "example.com." and got["zone"].zone_id.startswith("Z")
    assert len(got["zone"].name_servers) == 4


def test_image_lookups_answer_any_filter_and_the_ssm_aliases() -> None:
    def lookups() -> dict:
        return {
            "dlami": aws.ec2.get_ami(most_recent=True, owners=["amazon"], filters=[aws.ec2.GetAmiFilterArgs(
                name="name", values=["Deep Learning Base OSS Nvidia Driver GPU AMI (Ubuntu 22.04) *"])]),
            "by_arch": aws.ec2.get_ami(most_recent=True, owners=["amazon"], filters=[aws.ec2.GetAmiFilterArgs(
                name="architecture", values=["arm64"])]),
            "param": aws.ssm.get_parameter(name="/aws/service/ami-amazon-linux-latest/al2023-ami-kernel-default-x86_64"),
        }

    got, rendering = _run({"aws:region": "us-west-2"}, lookups)
    assert rendering.error is None
    assert got["dlami"].id.startswith("ami-") and got["dlami"].name.startswith("Deep Learning Base OSS")
    assert "*" not in got["dlami"].name and got["dlami"].root_device_name == "/dev/sda1"
    assert got["by_arch"].architecture == "arm64" and got["by_arch"].id != got["dlami"].id
    assert got["param"].value.startswith("ami-") and got["param"].type == "String"


def test_the_policy_document_is_rendered_as_the_provider_writes_it() -> None:
    def lookups() -> dict:
        return {"doc": aws.iam.get_policy_document(statements=[aws.iam.GetPolicyDocumentStatementArgs(
            sid="Read", actions=["s3:GetObject", "s3:ListBucket"], resources=["arn:aws:s3:::b/*"],
            principals=[aws.iam.GetPolicyDocumentStatementPrincipalArgs(type="Service",
                                                                        identifiers=["ec2.amazonaws.com"])],
            conditions=[aws.iam.GetPolicyDocumentStatementConditionArgs(
                test="StringEquals", variable="aws:SourceAccount", values=["123456789012"])],
        )])}

    got, rendering = _run({"aws:region": "us-east-1"}, lookups)
    assert rendering.error is None
    assert json.loads(got["doc"].json) == {
        "Version": "2012-10-17",
        "Statement": [{
            # A list of several actions in reverse order, as the provider writes it (see the mock's docstring).
            "Sid": "Read", "Effect": "Allow", "Action": ["s3:ListBucket", "s3:GetObject"],
            "Resource": "arn:aws:s3:::b/*", "Principal": {"Service": "ec2.amazonaws.com"},
            "Condition": {"StringEquals": {"aws:SourceAccount": "123456789012"}},
        }],
    }


def test_kms_and_eks_lookups_answer() -> None:
    def lookups() -> dict:
        return {"key": aws.kms.get_key(key_id="alias/aws/s3"), "eks": aws.eks.get_cluster(name="prod")}

    got, rendering = _run({"aws:region": "us-east-1"}, lookups)
    assert rendering.error is None
    assert got["key"].arn.startswith(f"arn:aws:kms:us-east-1:{ACCOUNT_ID}:key/") and got["key"].enabled
    assert got["eks"].name == "prod" and got["eks"].endpoint.startswith("https://")
    assert got["eks"].certificate_authorities[0].data


def test_alicloud_lookups_answer_for_the_stacks_region() -> None:
    def lookups() -> dict:
        nets = ali.vpc.get_networks(is_default=True)
        return {
            "zones": ali.get_zones(available_instance_type="ecs.gn7i-c8g1.2xlarge"),
            "gpu_types": ali.ecs.get_instance_types(gpu_amount=1),
            "images": ali.ecs.get_images(name_regex="^ubuntu_22", owners="system"),
            "regions": ali.get_regions(current=True),
            "account": ali.get_account(),
            "nets": nets,
            "switches": ali.vpc.get_switches(vpc_id=nets.ids[0]),
        }

    got, rendering = _run({"alicloud:region": "cn-hangzhou"}, lookups)
    assert rendering.error is None
    assert got["zones"].ids and all(z.startswith("cn-hangzhou-") for z in got["zones"].ids)
    assert got["gpu_types"].ids and all(t.gpus[0].amount == "1" for t in got["gpu_types"].instance_types)
    assert got["images"].ids and all(i.startswith("ubuntu_22") for i in got["images"].ids)
    assert [r.id for r in got["regions"].regions] == ["cn-hangzhou"]
    assert got["account"].id.isdigit()
    assert got["nets"].ids and got["nets"].ids[0].startswith("vpc-")
    assert got["switches"].ids and all(s.startswith("vsw-") for s in got["switches"].ids)


def test_every_answered_token_is_a_function_of_the_installed_sdks() -> None:
    import importlib
    import inspect

    for token in mocks.CALLS:
        package, module_path, name = token.split(":")
        root = {"aws": "pulumi_aws", "alicloud": "pulumi_alicloud"}[package]
        module = module_path.split("/")[0]
        sdk = importlib.import_module(root if module == "index" else f"{root}.{module}")
        function = getattr(sdk, name[0].lower() + "".join(f"_{c.lower()}" if c.isupper() else c for c in name[1:]))
        assert f"'{token}'" in inspect.getsource(function) or f'"{token}"' in inspect.getsource(function), token


UNANSWERED = (
    "import pulumi_aws as aws\n"
    "sg = aws.ec2.SecurityGroup('before', description='registered before the lookup')\n"
    "\n"
    "cluster = aws.rds.get_cluster(cluster_identifier='prod')\n"
    "aws.ec2.SecurityGroup('after', description=cluster.endpoint)\n"
)


def test_an_unanswered_lookup_stops_the_program_naming_the_call_and_line(tmp_path: Path, capsys) -> None:
    project = tmp_path / "unanswered"
    project.mkdir()
    (project / "Pulumi.yaml").write_text("name: unanswered\nruntime: python\n")
    (project / "__main__.py").write_text(UNANSWERED)
    code = main(["plan", str(project), "--format", "json"])
    report = json.loads(capsys.readouterr().out)
    (stack,) = report["stacks"]
    assert "aws:rds/getCluster:getCluster" in stack["error"] and "__main__.py:4" in stack["error"]
    # What it registered before the lookup is reviewed, marked partial; exit 3 says so.
    assert [r["name"] for r in stack["resources"] if r["custom"]] == ["before"]
    assert stack["status"] == "partial" and stack["partial"] is True and code == 3 == report["exitCode"]
    assert any(v["resourceName"] == "before" for v in stack["violations"])


@pytest.mark.parametrize("fmt", ["markdown", "table"])
def test_a_partial_review_says_so_in_every_format(tmp_path: Path, capsys, fmt: str) -> None:
    project = tmp_path / "partial"
    project.mkdir()
    (project / "Pulumi.yaml").write_text("name: partial\nruntime: python\n")
    (project / "__main__.py").write_text(UNANSWERED)
    code = main(["plan", str(project), "--format", fmt])
    out = capsys.readouterr().out
    assert code == 3
    assert "aws:rds/getCluster:getCluster" in out and "__main__.py:4" in out
    assert ("Partial review" in out) if fmt == "markdown" else ("PARTIAL" in out and "partial review" in out)


def test_a_caught_unanswered_lookup_still_marks_the_review_partial() -> None:
    def program() -> None:
        with contextlib.suppress(Exception):
            aws.rds.get_cluster(cluster_identifier="prod")
        aws.ec2.SecurityGroup("after", description="registered after the caught lookup")

    rendering = render({"aws:region": "us-east-1"}, program=program)
    assert rendering.partial and "aws:rds/getCluster:getCluster" in rendering.error
