"""Spot instance requests of g5 instances, each terminated at its deadline by a scheduler schedule: a persistent
request (pulumi_aws's default), which would relaunch what the schedule terminates, and a one-time request."""

import json

import pulumi
import pulumi_aws as aws

expires = pulumi.Config("corpus").require("expiresAt")


def tags(experiment: str) -> dict[str, str]:
    return {
        "gpulease:owner": "bo@example.com", "gpulease:project": "speech", "gpulease:experiment": experiment,
        "gpulease:cost-center": "research", "gpulease:budget-usd": "100", "gpulease:expires-at": expires,
        "gpulease:max-runtime-hours": "8", "gpulease:checkpoint-uri": "s3://corpus-spot-ckpt/runs/",
        "gpulease:managed-by": "gpulease",
    }


role = aws.iam.Role("scheduler", tags=tags("shared"), assume_role_policy=json.dumps({
    "Version": "2012-10-17",
    "Statement": [{"Effect": "Allow", "Principal": {"Service": "scheduler.amazonaws.com"}, "Action": "sts:AssumeRole"}]}))


def request(name: str, **extra) -> None:
    req = aws.ec2.SpotInstanceRequest(
        name,
        ami="ami-0c1d2e3f405162738",
        instance_type="g5.xlarge",
        wait_for_fulfillment=True,
        metadata_options={"http_tokens": "required"},
        root_block_device={"volume_size": 100, "encrypted": True},
        tags=tags(name),
        **extra,
    )
    aws.scheduler.Schedule(
        f"{name}-stop",
        schedule_expression=f"at({expires.removesuffix('Z')})",
        flexible_time_window={"mode": "OFF"},
        target={"arn": "arn:aws:scheduler:::aws-sdk:ec2:terminateInstances", "role_arn": role.arn,
                "input": req.spot_instance_id.apply(lambda i: json.dumps({"InstanceIds": [i]}))},
    )


request("persistent")
request("one-time", spot_type="one-time")
