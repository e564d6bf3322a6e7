"""A spot GPU group of one instance that a morning schedule grows to 100 and an afternoon one shrinks to 0."""

import pulumi_aws as aws

TAGS = {
    "gpulease:owner": "ml@example.com", "gpulease:project": "corpus", "gpulease:experiment": "sched",
    "gpulease:cost-center": "research", "gpulease:budget-usd": "500", "gpulease:expires-at": "2026-12-01T16:00:00Z",
    "gpulease:max-runtime-hours": "8", "gpulease:checkpoint-uri": "s3://corpus-sched-ckpt/runs/",
    "gpulease:managed-by": "gpulease",
}

template = aws.ec2.LaunchTemplate(
    "trainer", instance_type="p4d.24xlarge", image_id="ami-0123456789abcdef0",
    metadata_options={"http_tokens": "required"}, instance_market_options={"market_type": "spot"},
    block_device_mappings=[{"device_name": "/dev/xvda", "ebs": {"encrypted": "true"}}], tags=TAGS,
    tag_specifications=[{"resource_type": "instance", "tags": TAGS}])
group = aws.autoscaling.Group(
    "trainers", min_size=0, max_size=1, desired_capacity=1, availability_zones=["us-east-1a"],
    launch_template={"id": template.id, "version": "$Latest"},
    tags=[{"key": k, "value": v, "propagate_at_launch": True} for k, v in TAGS.items()])
aws.autoscaling.Schedule("morning", autoscaling_group_name=group.name, scheduled_action_name="morning",
                         min_size=100, max_size=100, desired_capacity=100, start_time="2026-12-01T09:00:00Z")
aws.autoscaling.Schedule("evening", autoscaling_group_name=group.name, scheduled_action_name="evening",
                         min_size=0, max_size=0, desired_capacity=0, start_time="2026-12-01T15:00:00Z")
