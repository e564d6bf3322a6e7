"""Alibaba GPU forms beyond ECS: an ECI container group on a gn7i specification with a GPU container, and a
PAI-EAS model service whose serviceConfig asks for a GPU specification; nothing in either ends it at a time."""

import json

import pulumi
import pulumi_alicloud as alicloud

expires = pulumi.Config("corpus").require("expiresAt")
tags = {
    "gpulease:owner": "eci@example.com", "gpulease:project": "eci", "gpulease:experiment": "eci",
    "gpulease:cost-center": "research", "gpulease:budget-usd": "100", "gpulease:expires-at": expires,
    "gpulease:max-runtime-hours": "8", "gpulease:checkpoint-uri": "oss://corpus-eci-ckpt/runs/",
    "gpulease:managed-by": "gpulease",
}
alicloud.eci.ContainerGroup(
    "trainer", container_group_name="trainer", security_group_id="sg-0a1b2c3d4e5f60718",
    vswitch_id="vsw-0a1b2c3d4e5f60718", instance_type="ecs.gn7i-c8g1.2xlarge", spot_strategy="SpotAsPriceGo",
    restart_policy="Never", tags=tags,
    containers=[{"name": "train", "image": "registry.cn-hangzhou.aliyuncs.com/corpus/train:1", "gpu": 1}])
alicloud.pai.Service("serve", tags=tags, service_config=json.dumps({
    "name": "serve", "metadata": {"instance": 2, "gpu": 1},
    "cloud": {"computing": {"instance_type": "ecs.gn7i-c8g1.2xlarge"}},
    "containers": [{"image": "registry.cn-hangzhou.aliyuncs.com/corpus/serve:1"}]}))
