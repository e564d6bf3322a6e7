"""An autoscaling group of g5 spot instances launching from a template that sets no block device mappings: the
image's own mappings decide the root volume's encryption, so it is not asserted (as for an instance without a
root block device)."""

import pulumi
import pulumi_aws as aws

expires = pulumi.Config("corpus").require("expiresAt")
tags = {
    "gpulease:owner": "lu@example.com", "gpulease:project": "train", "gpulease:experiment": "train",
    "gpulease:cost-center": "research", "gpulease:budget-usd": "400", "gpulease:expires-at": expires,
    "gpulease:max-runtime-hours": "8", "gpulease:checkpoint-uri": "s3://corpus-lt-ckpt/runs/",
    "gpulease:managed-by": "gpulease",
}
template = aws.ec2.LaunchTemplate("nodes", image_id="ami-0c1d2e3f405162738", instance_type="g5.xlarge",
                                  instance_market_options={"market_type": "spot"},
                                  metadata_options={"http_tokens": "required"}, tags=tags)
group = aws.autoscaling.Group("trainers", min_size=0, max_size=2, desired_capacity=1,
                              vpc_zone_identifiers=["subnet-0a1b2c3d4e5f60718"],
                              launch_template={"id": template.id, "version": "$Latest"},
                              tags=[{"key": k, "value": v, "propagate_at_launch": True} for k, v in tags.items()])
aws.autoscaling.Schedule("trainers-stop", autoscaling_group_name=group.name, scheduled_action_name="stop",
                         min_size=0, max_size=0, desired_capacity=0, start_time=expires)
