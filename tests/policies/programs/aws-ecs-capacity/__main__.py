"""ECS capacity from an autoscaling group of spot g4dn instances (a launch configuration with a spot price): the
group is scaled to zero at its deadline, but its capacity provider's managed termination protection keeps
instances running tasks alive."""

import pulumi
import pulumi_aws as aws

expires = pulumi.Config("corpus").require("expiresAt")


def tags(experiment: str) -> dict[str, str]:
    return {
        "gpulease:owner": "eve@example.com", "gpulease:project": "batch", "gpulease:experiment": experiment,
        "gpulease:cost-center": "research", "gpulease:budget-usd": "100", "gpulease:expires-at": expires,
        "gpulease:max-runtime-hours": "8", "gpulease:checkpoint-uri": "s3://corpus-ecs-ckpt/runs/",
        "gpulease:managed-by": "gpulease",
    }


config = aws.ec2.LaunchConfiguration(
    "workers",
    image_id="ami-0c1d2e3f405162738",
    instance_type="g4dn.xlarge",
    spot_price="0.30",
    metadata_options={"http_tokens": "required"},
    root_block_device={"volume_size": 100, "encrypted": True},
)
group = aws.autoscaling.Group(
    "workers",
    name="corpus-ecs-workers",
    min_size=0,
    max_size=3,
    vpc_zone_identifiers=["subnet-0a1b2c3d4e5f60718"],
    launch_configuration=config.name,
    tags=[{"key": k, "value": v, "propagate_at_launch": True} for k, v in tags("workers").items()],
)
aws.autoscaling.Schedule("workers-stop", autoscaling_group_name=group.name, scheduled_action_name="deadline",
                         min_size=0, max_size=0, desired_capacity=0, start_time=expires)
aws.ecs.CapacityProvider(
    "workers",
    auto_scaling_group_provider={"auto_scaling_group_arn": group.arn, "managed_termination_protection": "ENABLED",
                                 "managed_scaling": {"status": "ENABLED", "target_capacity": 100}},
    tags=tags("workers"),
)
