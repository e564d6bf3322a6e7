"""SageMaker on GPU types: an endpoint configuration of two ml.p4d.24xlarge with the endpoint serving it (the
shape of the SageMaker examples), deleted at its deadline by a schedule; a notebook instance and a Studio app on
ml.g5 types with nothing stopping them; a domain whose default Studio instance type is a GPU one."""

import json

import pulumi
import pulumi_aws as aws

expires = pulumi.Config("corpus").require("expiresAt")
tags = {
    "gpulease:owner": "sam@example.com", "gpulease:project": "serving", "gpulease:experiment": "serving",
    "gpulease:cost-center": "research", "gpulease:budget-usd": "900", "gpulease:expires-at": expires,
    "gpulease:max-runtime-hours": "6", "gpulease:on-demand-reason": "SageMaker hosting has no spot",
    "gpulease:checkpoint-uri": "none", "gpulease:managed-by": "gpulease",
}
config = aws.sagemaker.EndpointConfiguration("cfg", tags=tags, production_variants=[{
    "variant_name": "v", "model_name": "m", "instance_type": "ml.p4d.24xlarge", "initial_instance_count": 2}])
endpoint = aws.sagemaker.Endpoint("ep", endpoint_config_name=config.name, tags=tags)
role = aws.iam.Role("scheduler", tags=tags, assume_role_policy=json.dumps({"Version": "2012-10-17", "Statement": [
    {"Effect": "Allow", "Principal": {"Service": "scheduler.amazonaws.com"}, "Action": "sts:AssumeRole"}]}))
aws.scheduler.Schedule(
    "ep-delete",
    schedule_expression=f"at({expires.removesuffix('Z')})",
    flexible_time_window={"mode": "OFF"},
    target={"arn": "arn:aws:scheduler:::aws-sdk:sagemaker:deleteEndpoint", "role_arn": role.arn,
            "input": endpoint.name.apply(lambda n: json.dumps({"EndpointName": n}))},
)
aws.sagemaker.NotebookInstance("notebook", instance_type="ml.g5.xlarge", tags=tags,
                               role_arn="arn:aws:iam::123456789012:role/sagemaker")
aws.sagemaker.App("studio", app_name="lab", app_type="JupyterLab", domain_id="d-0a1b2c3d4e5f", tags=tags,
                  user_profile_name="sam", resource_spec={"instance_type": "ml.g5.2xlarge"})
aws.sagemaker.Domain(
    "domain", domain_name="research", auth_mode="IAM", vpc_id="vpc-0a1b2c3d4e5f60718", tags=tags,
    subnet_ids=["subnet-0a1b2c3d4e5f60718"],
    default_user_settings={"execution_role": "arn:aws:iam::123456789012:role/sagemaker",
                           "jupyter_lab_app_settings": {"default_resource_spec": {"instance_type": "ml.g5.4xlarge"}}})
