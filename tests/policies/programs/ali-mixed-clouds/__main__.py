"""A stack on both clouds: an S3 bucket in the AWS region and an Alibaba gn7i instance, each priced in its own
provider's region (the instance in cn-hangzhou, not in the stack's AWS region)."""

import pulumi
import pulumi_alicloud as alicloud
import pulumi_aws as aws

expires = pulumi.Config("corpus").require("expiresAt")
tags = {
    "gpulease:owner": "mo@example.com", "gpulease:project": "mixed", "gpulease:experiment": "mixed",
    "gpulease:cost-center": "research", "gpulease:budget-usd": "100", "gpulease:expires-at": expires,
    "gpulease:max-runtime-hours": "8", "gpulease:on-demand-reason": "a short evaluation",
    "gpulease:checkpoint-uri": "none", "gpulease:managed-by": "gpulease",
}
aws.s3.Bucket("results", tags=tags)
alicloud.ecs.Instance("gpu", instance_type="ecs.gn7i-c8g1.2xlarge", image_id="ubuntu_22_04_x64_20G_alibase_20240926.vhd",
                      vswitch_id="vsw-0a1b2c3d4e5f60718", security_groups=["sg-0a1b2c3d4e5f60718"],
                      http_tokens="required", system_disk_category="cloud_essd", system_disk_size=100,
                      system_disk_encrypted=True, auto_release_time=expires, tags=tags)
