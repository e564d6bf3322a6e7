"""bucket-policy-public and instance-role-wildcard, through the analyzer path."""

from __future__ import annotations

import json

import pytest

from tests.support.policy import analyze, found, res, tags

S3_POLICY = "aws:s3/bucketPolicy:BucketPolicy"
OSS_POLICY = "alicloud:oss/bucketPolicy:BucketPolicy"
ROLE = "aws:iam/role:Role"
ROLE_POLICY = "aws:iam/rolePolicy:RolePolicy"
ATTACHMENT = "aws:iam/rolePolicyAttachment:RolePolicyAttachment"
RAM_ROLE = "alicloud:ram/role:Role"
RAM_POLICY = "alicloud:ram/policy:Policy"
RAM_ATTACHMENT = "alicloud:ram/rolePolicyAttachment:RolePolicyAttachment"


def doc(*statements: dict) -> str:
    return json.dumps({"Version": "2012-10-17", "Statement": list(statements)})


def public(*statements: dict, type_: str = S3_POLICY) -> list[tuple]:
    key = "policy"
    return found(analyze(res(type_, "p", {"bucket": "b", key: doc(*statements)})), "bucket-policy-public")


READ = {"Sid": "Read", "Effect": "Allow", "Action": "s3:GetObject", "Resource": "arn:aws:s3:::b/*"}


@pytest.mark.parametrize("principal", ["*", {"AWS": "*"}, {"AWS": ["arn:aws:iam::1:root", "*"]}])
def test_allow_to_everyone_is_mandatory(principal):
    assert public({**READ, "Principal": principal}) == [
        ("bucket-policy-public", "mandatory", "p",
         "BucketPolicy 'p': Read allows s3:GetObject to everyone (Principal \"*\" with no condition pinning it to "
         "your addresses, VPC, account or source ARN); accepted: named principals, a Deny, or such a condition")]


def test_deny_named_principals_and_pinning_conditions_pass():
    assert public({**READ, "Effect": "Deny", "Principal": "*"}) == []
    assert public({**READ, "Principal": {"AWS": "arn:aws:iam::123456789012:root"}}) == []
    assert public({**READ, "Principal": "*", "Condition": {"StringEquals": {"aws:SourceVpc": "vpc-1"}}}) == []
    # A condition that pins nothing (any address, a wildcard match) does not make it private.
    assert public({**READ, "Principal": "*", "Condition": {"IpAddress": {"aws:SourceIp": "0.0.0.0/0"}}}) != []
    assert public({**READ, "Principal": "*", "Condition": {"StringLike": {"aws:SourceArn": "*"}}}) != []


def test_oss_bucket_policy_allowing_everyone():
    (hit,) = public({"Effect": "Allow", "Principal": ["*"], "Action": ["oss:GetObject"],
                     "Resource": ["acs:oss:*:*:b/*"]}, type_=OSS_POLICY)
    assert hit[:3] == ("bucket-policy-public", "mandatory", "p") and "oss:GetObject to everyone" in hit[3]


def test_accepted_bucket_policy_is_not_reported_by_its_urn_or_urn_tail_and_a_bare_name_accepts_nothing():
    policy = res(S3_POLICY, "p", {"bucket": "b", "policy": doc({**READ, "Principal": "*"})})
    for entry in (policy.urn, f"{S3_POLICY}::p"):
        result = analyze(policy, config={"bucket-policy-public": {"acceptPublic": [entry]}})
        assert found(result, "bucket-policy-public") == [], entry
    bare = analyze(policy, config={"bucket-policy-public": {"acceptPublic": ["p"]}})
    assert [n for _, _, n, _ in found(bare, "bucket-policy-public")] == ["p"]


EC2_TRUST = doc({"Effect": "Allow", "Principal": {"Service": "ec2.amazonaws.com"}, "Action": "sts:AssumeRole"})


def wildcard(*resources) -> list[tuple]:
    return [(h[2], h[3]) for h in found(analyze(*resources), "instance-role-wildcard")]


def test_instance_role_with_wildcards_is_mandatory():
    role = res(ROLE, "r", {"assumeRolePolicy": EC2_TRUST, "tags": tags()})
    broad = res(ROLE_POLICY, "all", {"role": "r-id", "policy": doc({"Effect": "Allow", "Action": "*", "Resource": "*"})},
                property_dependencies={"role": [role.urn]})
    s3 = res(ROLE_POLICY, "s3", {"role": "r-id", "policy": doc(
        {"Effect": "Allow", "Action": ["s3:*"], "Resource": "arn:aws:s3:::ckpt/*"},
        {"Effect": "Allow", "Action": ["s3:PutObject", "ec2:DescribeInstances"], "Resource": "*"})},
        property_dependencies={"role": [role.urn]})
    admin = res(ATTACHMENT, "admin", {"role": "r-id", "policyArn": "arn:aws:iam::aws:policy/AdministratorAccess"},
                property_dependencies={"role": [role.urn]})
    ((name, message),) = wildcard(role, broad, s3, admin)
    assert name == "r"
    assert message == ("Role 'r', a role instances assume: RolePolicy 'all' allows Action \"*\"; RolePolicy 's3' allows "
                       "s3:PutObject on Resource \"*\"; 'admin' attaches AdministratorAccess; whoever runs code on the "
                       "instance holds these rights; accepted: the actions it needs on the resources it needs (its "
                       "checkpoint prefix, its own instance)")


def test_scoped_grants_and_roles_instances_do_not_assume_pass():
    role = res(ROLE, "r", {"assumeRolePolicy": EC2_TRUST, "tags": tags()})
    scoped = res(ROLE_POLICY, "ok", {"role": "r-id", "policy": doc(
        {"Effect": "Allow", "Action": "s3:*", "Resource": "arn:aws:s3:::ckpt/*"},
        {"Effect": "Allow", "Action": "ec2:DescribeInstances", "Resource": "*"},
        {"Effect": "Deny", "Action": "*", "Resource": "*"})}, property_dependencies={"role": [role.urn]})
    assert wildcard(role, scoped) == []
    lambda_role = res(ROLE, "fn", {"assumeRolePolicy": EC2_TRUST.replace("ec2.amazonaws.com", "lambda.amazonaws.com"),
                                   "tags": tags()})
    broad = res(ROLE_POLICY, "all", {"role": "fn-id", "policy": doc({"Effect": "Allow", "Action": "*", "Resource": "*"})},
                property_dependencies={"role": [lambda_role.urn]})
    assert wildcard(lambda_role, broad) == []


def test_ram_role_with_a_wildcard_policy():
    role = res(RAM_ROLE, "r", {"roleName": "trainer", "assumeRolePolicyDocument": json.dumps({"Version": "1", "Statement": [
        {"Effect": "Allow", "Principal": {"Service": ["ecs.aliyuncs.com"]}, "Action": "sts:AssumeRole"}]})})
    policy = res(RAM_POLICY, "p", {"policyName": "everything", "policyDocument": json.dumps({"Version": "1", "Statement": [
        {"Effect": "Allow", "Action": "*", "Resource": "*"}]})})
    attach = res(RAM_ATTACHMENT, "a", {"roleName": "trainer", "policyName": "everything", "policyType": "Custom"})
    ((name, message),) = wildcard(role, policy, attach)
    assert name == "r" and message.startswith("Role 'r', a role instances assume: Policy 'p' allows Action \"*\";")
