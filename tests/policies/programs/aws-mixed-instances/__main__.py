"""Groups of p4d / p5 instances through mixed-instances policies: all spot, all on-demand (the distribution's
default), and a mix; each scaled to zero at its deadline by an EventBridge Scheduler schedule."""

import json

import pulumi
import pulumi_aws as aws

expires = pulumi.Config("corpus").require("expiresAt")
at = expires.removesuffix("Z")


def tags(experiment: str) -> dict[str, str]:
    return {
        "gpulease:owner": "erin@example.com", "gpulease:project": "pretrain", "gpulease:experiment": experiment,
        "gpulease:cost-center": "research", "gpulease:budget-usd": "500", "gpulease:expires-at": expires,
        "gpulease:max-runtime-hours": "8", "gpulease:checkpoint-uri": "s3://corpus-mixed-ckpt/runs/",
        "gpulease:managed-by": "gpulease",
    }


bucket = aws.s3.Bucket("ckpt", bucket="corpus-mixed-ckpt", tags=tags("shared"))
aws.s3.BucketVersioning("ckpt-versioning", bucket=bucket.id, versioning_configuration={"status": "Enabled"})
aws.s3.BucketLifecycleConfiguration("ckpt-lifecycle", bucket=bucket.id,
                                    rules=[{"id": "expire", "status": "Enabled", "expiration": {"days": 14}}])
aws.s3.BucketPublicAccessBlock("ckpt-block", bucket=bucket.id, block_public_acls=True, block_public_policy=True,
                               ignore_public_acls=True, restrict_public_buckets=True)

template = aws.ec2.LaunchTemplate(
    "node",
    name="corpus-node",
    image_id="ami-0f1e2d3c4b5a69788",
    metadata_options={"http_tokens": "required"},
    block_device_mappings=[{"device_name": "/dev/sda1", "ebs": {"volume_size": 500, "encrypted": True}}],
    tags=tags("nodes"),
)
role = aws.iam.Role("scheduler", assume_role_policy=json.dumps({"Version": "2012-10-17", "Statement": [
    {"Effect": "Allow", "Principal": {"Service": "scheduler.amazonaws.com"}, "Action": "sts:AssumeRole"}]}),
    tags=tags("shared"))


def group(name: str, size: int, distribution: dict) -> None:
    asg = aws.autoscaling.Group(
        name,
        name=f"corpus-{name}",
        min_size=0,
        max_size=size,
        vpc_zone_identifiers=["subnet-0a1b2c3d4e5f60718"],
        mixed_instances_policy={
            "instances_distribution": distribution,
            "launch_template": {
                "launch_template_specification": {"launch_template_id": template.id},
                "overrides": [{"instance_type": "p4d.24xlarge"}, {"instance_type": "p5.48xlarge"}],
            },
        },
        tags=[{"key": k, "value": v, "propagate_at_launch": True} for k, v in tags(name).items()],
    )
    aws.scheduler.Schedule(
        f"{name}-stop",
        schedule_expression=f"at({at})",
        flexible_time_window={"mode": "OFF"},
        target={
            "arn": "arn:aws:scheduler:::aws-sdk:autoscaling:updateAutoScalingGroup",
            "role_arn": role.arn,
            "input": asg.name.apply(lambda n: json.dumps({"AutoScalingGroupName": n, "MinSize": 0, "MaxSize": 0,
                                                          "DesiredCapacity": 0})),
        },
    )


group("all-spot", 1, {"on_demand_base_capacity": 0, "on_demand_percentage_above_base_capacity": 0})
group("default-on-demand", 1, {})
group("half-and-half", 2, {"on_demand_base_capacity": 1, "on_demand_percentage_above_base_capacity": 50})
