"""An ACK node pool of spot T4 GPU nodes with tokens required and encrypted disks: a node pool has no release
time and ACK replaces what is released under it, so nothing can end it at its deadline."""

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


alicloud.cs.NodePool(
    "gpu-pool",
    cluster_id="c-corpus",
    node_pool_name="corpus-gpu",
    vswitch_ids=["vsw-bp1corpus"],
    instance_types=["ecs.gn6i-c4g1.xlarge"],
    spot_strategy="SpotAsPriceGo",
    instance_metadata_options={"http_tokens": "required"},
    system_disk_category="cloud_essd",
    system_disk_encrypted=True,
    scaling_config={"enable": True, "min_size": 0, "max_size": 5},
    tags=tags("gpu-pool"),
)
