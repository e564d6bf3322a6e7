"""g5 instances on persistent spot requests (instance_market_options, stopped on interruption), each terminated at its
deadline by a scheduler schedule, as public programs that want a reclaimed instance back write them:

- ``bare``: nothing else, so terminating it at the deadline re-opens its request, which launches a new instance;
- ``cancelled``: a second schedule cancels its request (by the instance's spot_instance_request_id) a few minutes
  before the termination;
- ``cancelled-late``: the cancelling schedule fires with the termination, in no guaranteed order;
- ``until``: the request's own valid_until is the deadline, the termination at the deadline too;
- ``request``: an aws.ec2.SpotInstanceRequest (persistent and terminated on interruption by default) whose schedule
  cancels it by its id: a reclaim before then re-opens it and it launches an instance no schedule names.
"""

import json
from datetime import datetime, timedelta

import pulumi
import pulumi_aws as aws

expires = pulumi.Config("corpus").require("expiresAt")
deadline = datetime.fromisoformat(expires.replace("Z", "+00:00"))


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


def at(minutes_before: int) -> str:
    return f"at({(deadline - timedelta(minutes=minutes_before)).strftime('%Y-%m-%dT%H:%M:%S')})"


def schedule(name: str, api: str, key: str, ids: pulumi.Output, minutes_before: int = 0) -> None:
    aws.scheduler.Schedule(
        name,
        schedule_expression=at(minutes_before),
        flexible_time_window={"mode": "OFF"},
        target={"arn": f"arn:aws:scheduler:::aws-sdk:ec2:{api}", "role_arn": role.arn,
                "input": ids.apply(lambda i: json.dumps({key: [i]}))},
    )


def instance(name: str, cancel_before: int | None = None, **spot) -> None:
    inst = aws.ec2.Instance(
        name,
        ami="ami-0c1d2e3f405162738",
        instance_type="g5.xlarge",
        instance_market_options={"market_type": "spot", "spot_options": {
            "spot_instance_type": "persistent", "instance_interruption_behavior": "stop", **spot}},
        metadata_options={"http_tokens": "required"},
        root_block_device={"volume_size": 100, "encrypted": True},
        tags=tags(name),
    )
    schedule(f"{name}-stop", "terminateInstances", "InstanceIds", inst.id)
    if cancel_before is not None:
        schedule(f"{name}-cancel", "cancelSpotInstanceRequests", "SpotInstanceRequestIds",
                 inst.spot_instance_request_id, cancel_before)


instance("bare")
instance("cancelled", cancel_before=5)
instance("cancelled-late", cancel_before=0)
instance("until", valid_until=expires)

req = aws.ec2.SpotInstanceRequest(
    "request",
    ami="ami-0c1d2e3f405162738",
    instance_type="g5.xlarge",
    wait_for_fulfillment=True,
    metadata_options={"http_tokens": "required"},
    root_block_device={"volume_size": 100, "encrypted": True},
    tags=tags("request"),
)
schedule("request-stop", "terminateInstances", "InstanceIds", req.spot_instance_id)
schedule("request-cancel", "cancelSpotInstanceRequests", "SpotInstanceRequestIds", req.id, 5)
