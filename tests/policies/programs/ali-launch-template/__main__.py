"""ECS instances launched from launch templates: one from an ecs.EcsLaunchTemplate that sets spot, metadata tokens
and an encrypted system disk (the instance sets only its release time); one from an older ecs.LaunchTemplate that
leaves the instance on-demand with tokens optional."""

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


good = alicloud.ecs.EcsLaunchTemplate(
    "good",
    launch_template_name="corpus-good",
    image_id="ubuntu_22_04_x64_20G_alibase_20240101.vhd",
    instance_type="ecs.gn6i-c4g1.xlarge",
    spot_strategy="SpotAsPriceGo",
    http_tokens="required",
    system_disk={"category": "cloud_essd", "size": 100, "encrypted": True},
    tags=tags("from-good"),
)
old = alicloud.ecs.LaunchTemplate(
    "old",
    name="corpus-old",
    image_id="ubuntu_22_04_x64_20G_alibase_20240101.vhd",
    instance_type="ecs.gn6i-c4g1.xlarge",
    http_tokens="optional",
    system_disk={"category": "cloud_essd", "size": 100, "encrypted": True},
    tags=tags("from-old"),
)
for name, template in (("from-good", good), ("from-old", old)):
    alicloud.ecs.Instance(name, launch_template_id=template.id, auto_release_time=expires,
                          vswitch_id="vsw-bp1corpus", tags=tags(name))
