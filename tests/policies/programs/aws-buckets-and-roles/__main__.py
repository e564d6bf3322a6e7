"""Buckets and roles of a training setup not written with the kit: a results bucket with no public access block,
a data bucket whose block has two flags off and a policy allowing everyone, a logs bucket whose policy only denies
everyone, objects in the buckets, and an instance role granted far too much."""

import json

import pulumi
import pulumi_aws as aws

expires = pulumi.Config("corpus").require("expiresAt")
tags = {
    "gpulease:owner": "fay@example.com", "gpulease:project": "nlp", "gpulease:experiment": "storage",
    "gpulease:cost-center": "research", "gpulease:budget-usd": "50", "gpulease:expires-at": expires,
    "gpulease:max-runtime-hours": "8", "gpulease:checkpoint-uri": "s3://corpus-data/checkpoints/",
    "gpulease:managed-by": "gpulease",
}


def bucket(name: str, lifecycle: bool = True) -> aws.s3.Bucket:
    b = aws.s3.Bucket(name, bucket=f"corpus-{name}", tags=tags)
    if lifecycle:
        aws.s3.BucketLifecycleConfiguration(f"{name}-lifecycle", bucket=b.id, rules=[
            {"id": "expire", "status": "Enabled", "expiration": {"days": 30}}])
    return b


# Neither the results bucket nor the checkpoint bucket (the one the checkpoint-uri tag names) has lifecycle rules.
results = bucket("results", lifecycle=False)
data = bucket("data", lifecycle=False)
aws.s3.BucketPublicAccessBlock("data-block", bucket=data.id, block_public_acls=True, block_public_policy=True,
                               ignore_public_acls=False, restrict_public_buckets=False)
aws.s3.BucketPolicy("data-policy", bucket=data.id, policy=json.dumps({"Version": "2012-10-17", "Statement": [
    {"Sid": "PublicRead", "Effect": "Allow", "Principal": "*", "Action": "s3:GetObject",
     "Resource": "arn:aws:s3:::corpus-data/*"}]}))
logs = bucket("logs")
aws.s3.BucketPublicAccessBlock("logs-block", bucket=logs.id, block_public_acls=True, block_public_policy=True,
                               ignore_public_acls=True, restrict_public_buckets=True)
aws.s3.BucketPolicy("logs-policy", bucket=logs.id, policy=json.dumps({"Version": "2012-10-17", "Statement": [
    {"Sid": "TlsOnly", "Effect": "Deny", "Principal": "*", "Action": "s3:*",
     "Resource": ["arn:aws:s3:::corpus-logs", "arn:aws:s3:::corpus-logs/*"],
     "Condition": {"Bool": {"aws:SecureTransport": "false"}}}]}))
# Objects take object tags, not the accounting tags: none are demanded on them.
aws.s3.BucketObjectv2("readme", bucket=logs.id, key="README.txt", content="logs of the storage experiment")

role = aws.iam.Role("trainer", tags=tags, assume_role_policy=json.dumps({"Version": "2012-10-17", "Statement": [
    {"Effect": "Allow", "Principal": {"Service": "ec2.amazonaws.com"}, "Action": "sts:AssumeRole"}]}))
aws.iam.RolePolicy("trainer-everything", role=role.id, policy=json.dumps({"Version": "2012-10-17", "Statement": [
    {"Effect": "Allow", "Action": "*", "Resource": "*"}]}))
aws.iam.RolePolicy("trainer-read-all", role=role.id, policy=json.dumps({"Version": "2012-10-17", "Statement": [
    {"Effect": "Allow", "Action": ["s3:GetObject", "ec2:DescribeInstances"], "Resource": "*"}]}))
aws.iam.InstanceProfile("trainer", role=role.name, tags=tags)
