"""GPU instances created one by one: a spot g6e stopped by a scheduler schedule but with its metadata options
left unset and a public address behind a security group without SSH; an on-demand trn1 open to SSH over IPv6."""

import json

import pulumi
import pulumi_aws as aws

expires = pulumi.Config("corpus").require("expiresAt")


def tags(experiment: str) -> dict[str, str]:
    return {
        "gpulease:owner": "ada@example.com", "gpulease:project": "vision", "gpulease:experiment": experiment,
        "gpulease:cost-center": "research", "gpulease:budget-usd": "200", "gpulease:expires-at": expires,
        "gpulease:max-runtime-hours": "8", "gpulease:checkpoint-uri": "s3://corpus-instance-ckpt/runs/",
        "gpulease:managed-by": "gpulease",
    }


closed = aws.ec2.SecurityGroup("closed", vpc_id="vpc-0a1b2c3d4e5f60718", tags=tags("shared"),
                               egress=[{"protocol": "-1", "from_port": 0, "to_port": 0, "cidr_blocks": ["0.0.0.0/0"]}])
open_v6 = aws.ec2.SecurityGroup("open-v6", vpc_id="vpc-0a1b2c3d4e5f60718", tags=tags("shared"),
                                ingress=[{"protocol": "tcp", "from_port": 22, "to_port": 22,
                                          "ipv6_cidr_blocks": ["::/0"]}])

trainer = aws.ec2.Instance(
    "trainer",
    ami="ami-0c1d2e3f405162738",
    instance_type="g6e.xlarge",
    instance_market_options={"market_type": "spot"},
    associate_public_ip_address=True,
    vpc_security_group_ids=[closed.id],
    root_block_device={"volume_size": 200, "encrypted": True},
    tags=tags("trainer"),
)
role = aws.iam.Role("scheduler", tags=tags("shared"), assume_role_policy=json.dumps({
    "Version": "2012-10-17",
    "Statement": [{"Effect": "Allow", "Principal": {"Service": "scheduler.amazonaws.com"}, "Action": "sts:AssumeRole"}]}))
aws.scheduler.Schedule(
    "trainer-stop",
    schedule_expression=f"at({expires.removesuffix('Z')})",
    flexible_time_window={"mode": "OFF"},
    target={"arn": "arn:aws:scheduler:::aws-sdk:ec2:terminateInstances", "role_arn": role.arn,
            "input": trainer.id.apply(lambda i: json.dumps({"InstanceIds": [i]}))},
)

aws.ec2.Instance(
    "neuron",
    ami="ami-0c1d2e3f405162738",
    instance_type="trn1.2xlarge",
    metadata_options={"http_tokens": "optional"},
    vpc_security_group_ids=[open_v6.id],
    root_block_device={"volume_size": 100, "encrypted": True},
    tags=tags("neuron"),
)
