"""What the SDK cannot send to the engine (a number beyond a double's range) fails closed with the program's line:
a lookup's arguments, a stack output, a component's outputs; and a v1 ConfigGroup given one string is reported as
one given a list. Each program is reviewed as ``gpulease plan`` reviews it."""

from __future__ import annotations

from pathlib import Path

import pytest

from gpulease.review.engine import review
from tests.support.clock import FIXED_NOW

PROGRAMS = Path(__file__).parents[1] / "fixtures" / "programs"
ACCEPTED = "accepted: a number within a double's range (about ±1.8e308)"
AWS = "config:\n  aws:region: us-east-1\n"


def _reviewed(directory: Path) -> tuple[str, int]:
    (result,) = review([str(directory)], now=FIXED_NOW)
    return result.rendering.error or "", result.exit_code


def _program(tmp_path: Path, source: str) -> Path:
    (tmp_path / "Pulumi.yaml").write_text("name: unsent\nruntime: python\n")
    (tmp_path / "Pulumi.test.yaml").write_text(AWS)
    (tmp_path / "__main__.py").write_text(source)
    return tmp_path


@pytest.mark.parametrize(("program", "line"), [
    ("huge-int-lookup-argument",
     "__main__.py:6: the lookup aws:ec2/getAmi:getAmi: an argument number is too large to send to the engine"),
    ("huge-int-export", "__main__.py:7: stack output 'n': a stack output number is too large to send to the engine"),
    ("huge-int-component-outputs",
     "__main__.py:11: corpus:box:Box 'box': an output number is too large to send to the engine"),
])
def test_a_number_the_engine_cannot_be_sent_is_one_line_with_the_programs_site(program: str, line: str) -> None:
    error, code = _reviewed(PROGRAMS / program)
    assert error.startswith(line) and ACCEPTED in error and "OverflowError" not in error
    assert code == 3


def test_a_caught_lookup_that_could_not_be_sent_still_makes_the_review_partial(tmp_path: Path) -> None:
    source = ("import pulumi_aws as aws\n\naws.s3.Bucket('data')\n"
              "try:\n    aws.ec2.get_ami(owners=['amazon'], tags={'n': 10**400})\nexcept Exception:\n    pass\n")
    error, code = _reviewed(_program(tmp_path, source))
    assert error.startswith("__main__.py:5: the lookup aws:ec2/getAmi:getAmi: an argument number is too large")
    assert code == 3


def test_an_output_form_lookup_that_could_not_be_sent_names_its_line(tmp_path: Path) -> None:
    source = ("import pulumi_aws as aws\n\naws.s3.Bucket('data')\n"
              "aws.ec2.get_ami_output(owners=['amazon'], tags={'n': -(10**400)})\n")
    error, code = _reviewed(_program(tmp_path, source))
    assert error.startswith("__main__.py:4: the lookup aws:ec2/getAmi:getAmi: an argument number is too large")
    assert code == 3


def test_a_stack_output_within_range_is_kept(tmp_path: Path) -> None:
    source = "import pulumi\nimport pulumi_aws as aws\n\naws.s3.Bucket('data')\npulumi.export('n', 10**300)\n"
    (result,) = review([str(_program(tmp_path, source))], now=FIXED_NOW)
    assert result.rendering.error is None and result.rendering.outputs == {"n": 10**300}


def test_a_v1_config_group_given_one_string_gets_the_line_a_list_gets() -> None:
    as_string, code = _reviewed(PROGRAMS / "kubernetes-configgroup-v1-string")
    as_list, _ = _reviewed(PROGRAMS / "kubernetes-configgroup-v1")
    assert as_string == as_list and code == 3
    assert "kubernetes:yaml:decode at __main__.py:23 has no offline answer" in as_string
    assert "NodePool 'gpu': node.kubernetes.io/instance-type In ['p4d.24xlarge', 'p5.48xlarge']" in as_string
