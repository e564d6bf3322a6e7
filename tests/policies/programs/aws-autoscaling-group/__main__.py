"""Three autoscaling groups of g5.2xlarge spot instances from one launch template: one scaled to zero at its
deadline by a scheduled action, one with only a maximum instance lifetime, one protected from scale-in."""

import pulumi
import pulumi_aws as aws

expires = pulumi.Config("corpus").require("expiresAt")


def tags(experiment: str) -> dict[str, str]:
    return {
        "gpulease:owner": "dana@example.com", "gpulease:project": "fleet", "gpulease:experiment": experiment,
        "gpulease:cost-center": "research", "gpulease:budget-usd": "500", "gpulease:expires-at": expires,
        "gpulease:max-runtime-hours": "8", "gpulease:checkpoint-uri": "s3://corpus-asg-ckpt/runs/",
        "gpulease:managed-by": "gpulease",
    }


bucket = aws.s3.Bucket("ckpt", bucket="corpus-asg-ckpt", tags=tags("shared"))
aws.s3.BucketVersioning("ckpt-versioning", bucket=bucket.id, versioning_configuration={"status": "Enabled"})
aws.s3.BucketLifecycleConfiguration("ckpt-lifecycle", bucket=bucket.id,
                                    rules=[{"id": "expire", "status": "Enabled", "expiration": {"days": 14}}])
aws.s3.BucketPublicAccessBlock("ckpt-block", bucket=bucket.id, block_public_acls=True, block_public_policy=True,
                               ignore_public_acls=True, restrict_public_buckets=True)

template = aws.ec2.LaunchTemplate(
    "trainer",
    name="corpus-trainer",
    image_id="ami-0c1d2e3f405162738",
    instance_type="g5.2xlarge",
    instance_market_options={"market_type": "spot"},
    metadata_options={"http_tokens": "required", "http_put_response_hop_limit": 2},
    block_device_mappings=[{"device_name": "/dev/sda1", "ebs": {"volume_size": 200, "encrypted": True}}],
    tag_specifications=[{"resource_type": "instance", "tags": tags("trainers")}],
    tags=tags("trainers"),
)


def group(name: str, size: int, **extra) -> aws.autoscaling.Group:
    # The list form of tags, as autoscaling groups take them.
    return aws.autoscaling.Group(
        name,
        name=f"corpus-{name}",
        min_size=0,
        max_size=size,
        desired_capacity=size,
        vpc_zone_identifiers=["subnet-0a1b2c3d4e5f60718"],
        launch_template={"id": template.id, "version": "$Latest"},
        tags=[{"key": k, "value": v, "propagate_at_launch": True} for k, v in tags(name).items()],
        **extra,
    )


bounded = group("bounded", 2)
aws.autoscaling.Schedule("bounded-stop", autoscaling_group_name=bounded.name, scheduled_action_name="deadline",
                         min_size=0, max_size=0, desired_capacity=0, start_time=expires)

group("lifetime-only", 3, max_instance_lifetime=86400)

protected = group("protected", 1, protect_from_scale_in=True)
aws.autoscaling.Schedule("protected-stop", autoscaling_group_name=protected.name, scheduled_action_name="deadline",
                         min_size=0, max_size=0, desired_capacity=0, start_time=expires)
