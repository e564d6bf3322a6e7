"""GPU compute through pulumi_aws_native (Cloud Control): an instance with no block device mappings, an
autoscaling group launching from a spot launch template, an EKS node group and a SageMaker endpoint
configuration with its endpoint; a pulumi_aws schedule terminates the instance at its deadline."""

import json

import pulumi
import pulumi_aws as aws
import pulumi_aws_native as native

expires = pulumi.Config("corpus").require("expiresAt")
tag_map = {
    "gpulease:owner": "nat@example.com", "gpulease:project": "native", "gpulease:experiment": "native",
    "gpulease:cost-center": "research", "gpulease:budget-usd": "300", "gpulease:expires-at": expires,
    "gpulease:max-runtime-hours": "8", "gpulease:checkpoint-uri": "s3://corpus-native-ckpt/runs/",
    "gpulease:managed-by": "gpulease",
}
tags = [{"key": k, "value": v} for k, v in tag_map.items()]

box = native.ec2.Instance("box", image_id="ami-0c1d2e3f405162738", instance_type="g5.xlarge", tags=tags,
                          metadata_options={"http_tokens": "required"})
role = aws.iam.Role("scheduler", tags=tag_map, assume_role_policy=json.dumps({"Version": "2012-10-17", "Statement": [
    {"Effect": "Allow", "Principal": {"Service": "scheduler.amazonaws.com"}, "Action": "sts:AssumeRole"}]}))
aws.scheduler.Schedule(
    "box-stop",
    schedule_expression=f"at({expires.removesuffix('Z')})",
    flexible_time_window={"mode": "OFF"},
    target={"arn": "arn:aws:scheduler:::aws-sdk:ec2:terminateInstances", "role_arn": role.arn,
            "input": box.id.apply(lambda i: json.dumps({"InstanceIds": [i]}))},
)
template = native.ec2.LaunchTemplate("nodes", launch_template_data={
    "instance_type": "g6.xlarge", "instance_market_options": {"market_type": "spot"},
    "metadata_options": {"http_tokens": "required"},
    "block_device_mappings": [{"device_name": "/dev/xvda", "ebs": {"volume_size": 100, "encrypted": True}}],
    "tag_specifications": [{"resource_type": "instance", "tags": tags}]})
native.autoscaling.AutoScalingGroup("group", min_size="0", max_size="3", vpc_zone_identifier=["subnet-0a1b2c3d4e5f60718"],
                                    launch_template={"launch_template_id": template.id, "version": "1"},
                                    tags=[{**t, "propagate_at_launch": True} for t in tags])
native.eks.Nodegroup("gpu-nodes", cluster_name="corpus", node_role="arn:aws:iam::123456789012:role/nodes",
                     subnets=["subnet-0a1b2c3d4e5f60718"], instance_types=["g5.12xlarge"], capacity_type="SPOT",
                     scaling_config={"min_size": 0, "desired_size": 1, "max_size": 2}, tags=tag_map)
config = native.sagemaker.EndpointConfig("cfg", production_variants=[{
    "variant_name": "v", "model_name": "m", "instance_type": "ml.g5.xlarge", "initial_instance_count": 1}])
native.sagemaker.Endpoint("ep", endpoint_config_name=config.endpoint_config_name, tags=tags)
