"""ECS GPU instances: a spot gn7i with a release time at its deadline but its metadata tokens left unset; an
instance set of three vgn6i vGPU instances (a two-suffix type name), which can set neither metadata tokens nor
system-disk encryption, and has no release time."""

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


sg = alicloud.ecs.SecurityGroup("sg", vpc_id="vpc-bp1corpus", tags=tags("shared"))
alicloud.ecs.Instance(
    "trainer",
    image_id="ubuntu_22_04_x64_20G_alibase_20240101.vhd",
    instance_type="ecs.gn7i-c8g1.2xlarge",
    spot_strategy="SpotAsPriceGo",
    auto_release_time=expires,
    security_groups=[sg.id],
    vswitch_id="vsw-bp1corpus",
    system_disk_category="cloud_essd",
    system_disk_encrypted=True,
    tags=tags("trainer"),
)
alicloud.ecs.EcsInstanceSet(
    "workstations",
    amount=3,
    image_id="ubuntu_22_04_x64_20G_alibase_20240101.vhd",
    instance_type="ecs.vgn6i-m4-vws.xlarge",
    spot_strategy="SpotAsPriceGo",
    security_group_ids=[sg.id],
    vswitch_id="vsw-bp1corpus",
    tags=tags("workstations"),
)
