"""ESS scaling groups of GPU instances, each with a scaling configuration naming it: one scaled to zero at its
deadline by a scheduled task, one with only a maximum instance lifetime (which replaces instances, never stops
the group), and one running half of its capacity on-demand."""

import pulumi
import pulumi_alicloud as alicloud

expires = pulumi.Config("corpus").require("expiresAt")


def tags(experiment: str) -> dict[str, str]:
    return {
        "gpulease:owner": "hu@example.com", "gpulease:project": "vision", "gpulease:experiment": experiment,
        "gpulease:cost-center": "research", "gpulease:budget-usd": "300", "gpulease:expires-at": expires,
        "gpulease:max-runtime-hours": "8", "gpulease:checkpoint-uri": "oss://corpus-ali-ckpt/runs/",
        "gpulease:managed-by": "gpulease",
    }


def group(name: str, size: int, **extra) -> alicloud.ess.ScalingGroup:
    g = alicloud.ess.ScalingGroup(name, scaling_group_name=f"corpus-{name}", min_size=0, max_size=size,
                                  vswitch_ids=["vsw-bp1corpus"], tags=tags(name), **extra)
    alicloud.ess.ScalingConfiguration(
        f"{name}-config",
        scaling_group_id=g.id,
        image_id="ubuntu_22_04_x64_20G_alibase_20240101.vhd",
        instance_type="ecs.gn7i-c16g1.4xlarge",
        spot_strategy="SpotAsPriceGo",
        security_group_id="sg-bp1corpus",
        system_disk_category="cloud_essd",
        system_disk_encrypted=True,
        tags=tags(name),
        active=True,
    )
    return g


bounded = group("bounded", 2)
alicloud.ess.ScheduledTask("bounded-stop", scaling_group_id=bounded.id, launch_time=expires[:16] + "Z",
                           min_value=0, max_value=0, desired_capacity=0)
group("lifetime-only", 2, max_instance_lifetime=86400)
half = group("half-on-demand", 2, on_demand_base_capacity=1, on_demand_percentage_above_base_capacity=50)
alicloud.ess.ScheduledTask("half-stop", scaling_group_id=half.id, launch_time=expires[:16] + "Z",
                           min_value=0, max_value=0, desired_capacity=0)
