"""AWS Batch compute environments: an on-demand one of p4d.24xlarge capped at 768 vCPUs with nothing ending it
(the shape of the Batch examples), and a spot one of g5.2xlarge that an EventBridge Scheduler schedule scales to
zero vCPUs at its deadline."""

import json

import pulumi
import pulumi_aws as aws

expires = pulumi.Config("corpus").require("expiresAt")
tags = {
    "gpulease:owner": "bo@example.com", "gpulease:project": "batch", "gpulease:experiment": "batch",
    "gpulease:cost-center": "research", "gpulease:budget-usd": "5000", "gpulease:expires-at": expires,
    "gpulease:max-runtime-hours": "4", "gpulease:checkpoint-uri": "s3://corpus-batch-ckpt/runs/",
    "gpulease:managed-by": "gpulease",
}
network = {"subnets": ["subnet-0a1b2c3d4e5f60718"], "security_group_ids": ["sg-0a1b2c3d4e5f60718"],
           "instance_role": "arn:aws:iam::123456789012:instance-profile/ecsInstanceRole"}

aws.batch.ComputeEnvironment("a100s", type="MANAGED", tags=tags, compute_resources={
    "type": "EC2", "max_vcpus": 768, "instance_types": ["p4d.24xlarge"], **network})

template = aws.ec2.LaunchTemplate(
    "spot-nodes", metadata_options={"http_tokens": "required"}, tags=tags,
    block_device_mappings=[{"device_name": "/dev/xvda", "ebs": {"volume_size": 100, "encrypted": True}}])
spot = aws.batch.ComputeEnvironment("spot", type="MANAGED", tags=tags, compute_resources={
    "type": "SPOT", "max_vcpus": 64, "instance_types": ["g5.2xlarge"],
    "launch_template": {"launch_template_id": template.id}, **network})
role = aws.iam.Role("scheduler", tags=tags, assume_role_policy=json.dumps({"Version": "2012-10-17", "Statement": [
    {"Effect": "Allow", "Principal": {"Service": "scheduler.amazonaws.com"}, "Action": "sts:AssumeRole"}]}))
aws.scheduler.Schedule(
    "spot-stop",
    schedule_expression=f"at({expires.removesuffix('Z')})",
    flexible_time_window={"mode": "OFF"},
    target={"arn": "arn:aws:scheduler:::aws-sdk:batch:updateComputeEnvironment", "role_arn": role.arn,
            "input": spot.arn.apply(lambda arn: json.dumps(
                {"ComputeEnvironment": arn, "ComputeResources": {"MaxvCpus": 0, "MinvCpus": 0}}))},
)
