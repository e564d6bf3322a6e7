"""g5 instances whose persistent spot request comes from a launch template, each terminated at its deadline and
none cancelled:

- ``partial``: a pulumi_aws instance whose own market options say only ``market_type: spot`` (no spot_options), from
  a pulumi_aws template that sets persistent: how EC2 merges the two is not documented, so the template's counts;
- ``native``: an aws-native instance from an aws-native template (``launch_template_data``) that sets persistent;
- ``mixed``: a pulumi_aws instance from that aws-native template (spot through the template, not on-demand);
- ``native-from-aws``: an aws-native instance from the pulumi_aws template.
"""

import json
from datetime import datetime

import pulumi
import pulumi_aws as aws
import pulumi_aws_native as native

expires = pulumi.Config("corpus").require("expiresAt")
deadline = datetime.fromisoformat(expires.replace("Z", "+00:00"))
SPOT = {"market_type": "spot", "spot_options": {"spot_instance_type": "persistent",
                                                "instance_interruption_behavior": "stop"}}
MAPPINGS = [{"device_name": "/dev/sda1", "ebs": {"encrypted": True, "volume_size": 100}}]


def tags(experiment: str) -> dict[str, str]:
    return {
        "gpulease:owner": "bo@example.com", "gpulease:project": "speech", "gpulease:experiment": experiment,
        "gpulease:cost-center": "research", "gpulease:budget-usd": "100", "gpulease:expires-at": expires,
        "gpulease:max-runtime-hours": "8", "gpulease:checkpoint-uri": "s3://corpus-persistent-ckpt/runs/",
        "gpulease:managed-by": "gpulease",
    }


role = aws.iam.Role("scheduler", tags=tags("shared"), assume_role_policy=json.dumps({
    "Version": "2012-10-17",
    "Statement": [{"Effect": "Allow", "Principal": {"Service": "scheduler.amazonaws.com"}, "Action": "sts:AssumeRole"}]}))


def terminate(name: str, instance_id: pulumi.Output) -> None:
    aws.scheduler.Schedule(
        f"{name}-stop",
        schedule_expression=f"at({deadline.strftime('%Y-%m-%dT%H:%M:%S')})",
        flexible_time_window={"mode": "OFF"},
        target={"arn": "arn:aws:scheduler:::aws-sdk:ec2:terminateInstances", "role_arn": role.arn,
                "input": instance_id.apply(lambda i: json.dumps({"InstanceIds": [i]}))},
    )


aws_template = aws.ec2.LaunchTemplate("aws-lt", instance_market_options=SPOT, metadata_options={"http_tokens": "required"},
                                      block_device_mappings=MAPPINGS, tags=tags("aws-lt"))
native_template = native.ec2.LaunchTemplate("native-lt", launch_template_data={
    "instance_market_options": SPOT, "metadata_options": {"http_tokens": "required"},
    "block_device_mappings": MAPPINGS})


def aws_instance(name: str, template: pulumi.Output, **extra: object) -> None:
    inst = aws.ec2.Instance(
        name,
        ami="ami-0c1d2e3f405162738",
        instance_type="g5.xlarge",
        launch_template={"id": template},
        metadata_options={"http_tokens": "required"},
        root_block_device={"volume_size": 100, "encrypted": True},
        tags=tags(name),
        **extra,
    )
    terminate(name, inst.id)


def native_instance(name: str, template: pulumi.Output, version: pulumi.Output) -> None:
    inst = native.ec2.Instance(
        name,
        image_id="ami-0c1d2e3f405162738",
        instance_type="g5.xlarge",
        launch_template={"launch_template_id": template, "version": version},
        tags=[{"key": k, "value": v} for k, v in tags(name).items()],
    )
    terminate(name, inst.id)


aws_instance("partial", aws_template.id, instance_market_options={"market_type": "spot"})
native_instance("native", native_template.id, native_template.latest_version_number)
aws_instance("mixed", native_template.id)
native_instance("native-from-aws", aws_template.id, aws_template.latest_version.apply(str))
