"""Resources the cost model has no price for, in a region other than the stack's: an explicit provider in
eu-west-1 carries a GPU instance of a type the catalog lacks and an RDS database (a type the model does not price);
the stack's own region prices a g5 instance."""

import json

import pulumi
import pulumi_aws as aws

expires = pulumi.Config("corpus").require("expiresAt")
tags = {
    "gpulease:owner": "gil@example.com", "gpulease:project": "eval", "gpulease:experiment": "eval",
    "gpulease:cost-center": "research", "gpulease:budget-usd": "400", "gpulease:expires-at": expires,
    "gpulease:max-runtime-hours": "8", "gpulease:on-demand-reason": "evaluation runs cannot be interrupted",
    "gpulease:checkpoint-uri": "s3://corpus-eval-ckpt/runs/",
    "gpulease:managed-by": "gpulease",
}
ireland = aws.Provider("ireland", region="eu-west-1")
role = aws.iam.Role("scheduler", tags=tags, assume_role_policy=json.dumps({"Version": "2012-10-17", "Statement": [
    {"Effect": "Allow", "Principal": {"Service": "scheduler.amazonaws.com"}, "Action": "sts:AssumeRole"}]}))


def instance(name: str, instance_type: str, opts: pulumi.ResourceOptions | None = None) -> None:
    box = aws.ec2.Instance(name, ami="ami-0c1d2e3f405162738", instance_type=instance_type,
                           metadata_options={"http_tokens": "required"},
                           root_block_device={"volume_size": 100, "encrypted": True}, tags=tags, opts=opts)
    aws.scheduler.Schedule(
        f"{name}-stop",
        schedule_expression=f"at({expires.removesuffix('Z')})",
        flexible_time_window={"mode": "OFF"},
        target={"arn": "arn:aws:scheduler:::aws-sdk:ec2:terminateInstances", "role_arn": role.arn,
                "input": box.id.apply(lambda i: json.dumps({"InstanceIds": [i]}))},
        opts=opts,
    )


instance("local", "g5.xlarge")
instance("remote", "p6e-gb200.36xlarge", pulumi.ResourceOptions(provider=ireland))
aws.rds.Instance("results-db", engine="postgres", instance_class="db.t4g.micro", allocated_storage=20,
                 username="eval", manage_master_user_password=True, storage_encrypted=True, skip_final_snapshot=True,
                 tags=tags, opts=pulumi.ResourceOptions(provider=ireland))
