"""A partial review's hourly cost is unknown in every format; offline URNs are the engine's."""

from __future__ import annotations

import json

from gpulease.cli import main


def _project(tmp_path, program: str) -> str:
    (tmp_path / "Pulumi.yaml").write_text("name: proj\nruntime: python\n")
    (tmp_path / "Pulumi.test.yaml").write_text("config:\n  aws:region: us-east-1\n")
    (tmp_path / "__main__.py").write_text(program)
    return str(tmp_path)


def test_a_partial_review_never_shows_a_known_hourly_cost(tmp_path, capsys):
    where = _project(tmp_path, "import pulumi_aws as aws\n\naws.ec2.SecurityGroup('sg', vpc_id='vpc-1')\n"
                               "raise RuntimeError('x')\n")
    assert main(["plan", where, "--format", "json"]) == 3
    cost = json.loads(capsys.readouterr().out)["stacks"][0]["cost"]
    assert (cost["hourlyKnown"], cost["hourlyUsd"], cost["maxHourlyUsd"]) == (False, None, None)
    assert cost["hourlyReason"].startswith("the review is partial")
    main(["plan", where, "--format", "markdown"])
    row = next(line for line in capsys.readouterr().out.splitlines() if line.startswith("| `proj/test`"))
    assert row.split(" | ")[5] == "unknown", row
    main(["plan", where, "--format", "text"])
    assert "cost: unknown (the review is partial" in capsys.readouterr().out


def test_offline_urns_are_the_engines_top_level_and_nested(tmp_path, capsys):
    where = _project(tmp_path, (
        "import pulumi, pulumi_aws as aws\n\n"
        "outer = pulumi.ComponentResource('my:index:Outer', 'o')\n"
        "inner = pulumi.ComponentResource('my:index:Inner', 'i', None, pulumi.ResourceOptions(parent=outer))\n"
        "aws.s3.Bucket('nested', opts=pulumi.ResourceOptions(parent=inner))\n"
        "aws.s3.Bucket('top')\n"))
    main(["plan", where, "--format", "json"])
    urns = {r["name"]: r["urn"] for r in json.loads(capsys.readouterr().out)["stacks"][0]["resources"]}
    assert urns["top"] == "urn:pulumi:test::proj::aws:s3/bucket:Bucket::top"
    assert urns["nested"] == "urn:pulumi:test::proj::my:index:Outer$my:index:Inner$aws:s3/bucket:Bucket::nested"
