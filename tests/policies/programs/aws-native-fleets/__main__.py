"""pulumi_aws_native's EC2 Fleet and spot fleet of GPU instances: a request fleet that ends at its deadline, an
instant fleet (nothing ends it, not even its expiry), and a spot fleet from launch specifications whose expiry
leaves its instances running. The fleets' tags are their fleet tag specifications (the launch template has none)."""

import pulumi
import pulumi_aws_native as native

expires = pulumi.Config("corpus").require("expiresAt")


def tags(experiment: str) -> list[dict[str, str]]:
    values = {
        "gpulease:owner": "cy@example.com", "gpulease:project": "rl", "gpulease:experiment": experiment,
        "gpulease:cost-center": "research", "gpulease:budget-usd": "300", "gpulease:expires-at": expires,
        "gpulease:max-runtime-hours": "8", "gpulease:checkpoint-uri": "s3://corpus-native-fleet-ckpt/runs/",
        "gpulease:managed-by": "gpulease",
    }
    return [{"key": k, "value": v} for k, v in values.items()]


template = native.ec2.LaunchTemplate("node", launch_template_name="corpus-native-fleet-node", launch_template_data={
    "image_id": "ami-0c1d2e3f405162738",
    "metadata_options": {"http_tokens": "required"},
    "block_device_mappings": [{"device_name": "/dev/sda1", "ebs": {"volume_size": 100, "encrypted": True}}]})


def fleet(name: str, **extra) -> None:
    native.ec2.Ec2Fleet(
        name,
        launch_template_configs=[{
            "launch_template_specification": {"launch_template_id": template.id, "version": "$Latest"},
            "overrides": [{"instance_type": "g4dn.xlarge"}, {"instance_type": "g5.xlarge"}],
        }],
        target_capacity_specification={"default_target_capacity_type": "spot", "total_target_capacity": 4},
        tag_specifications=[{"resource_type": "fleet", "tags": tags(name)}],
        **extra,
    )


fleet("bounded", type="request", valid_until=expires, terminate_instances_with_expiration=True)
# An instant fleet's valid_until ends the request, not the instances it handed over.
fleet("instant", type="instant", valid_until=expires, terminate_instances_with_expiration=True)

native.ec2.SpotFleet("legacy", spot_fleet_request_config_data={
    "iam_fleet_role": "arn:aws:iam::123456789012:role/aws-ec2-spot-fleet-tagging-role",
    "target_capacity": 2,
    "valid_until": expires,
    "launch_specifications": [{
        "image_id": "ami-0c1d2e3f405162738",
        "instance_type": "p3.2xlarge",
        "block_device_mappings": [{"device_name": "/dev/xvda", "ebs": {"volume_size": 100, "encrypted": False}}],
    }],
}, tags=tags("legacy"))
