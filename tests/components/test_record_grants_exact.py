"""The instance role's write grants are exactly the keys the instance writes: no ``*`` from the checkpoint prefix
widens them, and every cluster node may write the ready record its settings name."""

import json
import re

import pytest

from components.alicloud.identity import checkpoint_access_policy as ali_policy
from components.aws.identity import checkpoint_access_policy as aws_policy
from components.cluster import node_checkpoint_uri
from components.image_bake import READY_FOLDER, record_uri
from components.spec.sections import CheckpointSpec

POLICIES = [(aws_policy, "arn:aws:s3:::bkt", "arn:aws:s3:::"), (ali_policy, "acs:oss:*:1:bkt", "acs:oss:*:1:")]


def _iam_match(pattern: str, value: str) -> bool:
    """IAM / RAM resource matching: ``*`` is any run of characters (``/`` included), ``?`` any one."""
    regex = "".join(".*" if c == "*" else "." if c == "?" else re.escape(c) for c in pattern)
    return re.fullmatch(regex, value) is not None


def _put_resources(doc: str) -> list[str]:
    out: list[str] = []
    for st in json.loads(doc)["Statement"]:
        actions = st["Action"] if isinstance(st["Action"], list) else [st["Action"]]
        if any(a.endswith(":PutObject") for a in actions):
            out += st["Resource"] if isinstance(st["Resource"], list) else [st["Resource"]]
    return out


@pytest.mark.parametrize("raw", ["*/", "ck*/", "team/*", "a*b/"])
def test_a_star_in_the_checkpoint_prefix_is_refused_as_a_wildcard_of_the_grants(raw: str) -> None:
    with pytest.raises(ValueError, match=r"no \*: it would be a wildcard in the role's grants"):
        CheckpointSpec._prefix(raw)


@pytest.mark.parametrize("policy, arn, head", POLICIES)
@pytest.mark.parametrize("raw, other", [("ck/", "ck2/"), ("ck/", "ckx/nodes/1/"), ("team/llama/", "team/llama2/")])
def test_the_write_grants_reach_no_sibling_prefix(policy, arn, head, raw, other) -> None:
    prefix = CheckpointSpec._prefix(raw)
    foreign = [f"bkt/_gpulease/{other}control/ready.json", f"bkt/_gpulease/{other}ready/i-1.json",
               f"bkt/{other}step-100.pt"]
    for rank in (None, 0, 1, 3):
        grants = [r.removeprefix(head) for r in _put_resources(policy(arn, prefix, rank))]
        assert all(r.count("*") == 1 and r.endswith("*") for r in grants), grants  # only the folder's own tail
        assert not [(r, k) for r in grants for k in foreign if _iam_match(r, k)], (rank, grants)


@pytest.mark.parametrize("policy, arn, head", POLICIES)
@pytest.mark.parametrize("rank", [None, 0, 1, 3])
def test_every_node_may_write_the_ready_record_its_settings_name_and_no_other_nodes(policy, arn, head, rank) -> None:
    scheme = "s3" if head.startswith("arn:aws") else "oss"
    written = record_uri(node_checkpoint_uri(f"{scheme}://bkt/pretrain/", rank), READY_FOLDER)
    written = written.removeprefix(f"{scheme}://") + "i-0abc.json"
    grants = [r.removeprefix(head) for r in _put_resources(policy(arn, "pretrain/", rank))]
    assert any(_iam_match(r, written) for r in grants), (written, grants)
    for other in {None, 1, 3} - {rank, 0 if rank is None else rank}:
        theirs = record_uri(node_checkpoint_uri(f"{scheme}://bkt/pretrain/", other), READY_FOLDER)
        theirs = theirs.removeprefix(f"{scheme}://") + "i-0abc.json"
        if theirs != written:
            assert not any(_iam_match(r, theirs) for r in grants), (other, theirs, grants)
