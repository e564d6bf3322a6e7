"""g5 instances and spot requests on persistent spot requests, each with a schedule terminating it, where what ends
the request is its own valid_until, a cancelling schedule with a flexible window, or nothing a reclaim respects:

- ``early``: valid_until at the deadline, but the termination half an hour before it: the request is still valid when
  the termination re-opens it;
- ``late-end``: valid_until ten minutes before the deadline, the termination at the deadline (accepted);
- ``flexstop``: the cancel at deadline - 5 min, the termination at deadline - 30 min with a 26-minute flexible window:
  it may come before the cancel;
- ``flexcancel``: the cancel at deadline - 10 min with a 10-minute window (latest: the deadline), the termination
  at the deadline: less than 60 s apart;
- ``flexok``: the cancel at deadline - 10 min, window off; the termination at deadline - 5 min with a 5-minute window
  (accepted);
- ``reclaimed``: an aws.ec2.SpotInstanceRequest, persistent, terminated on interruption (the API's default): a
  reclaim re-opens it and it launches an instance no schedule names, however it is cancelled;
- ``stopped``: the same request stopped on interruption and cancelled five minutes early (accepted).
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


def moment(minutes_before: int) -> str:
    return (deadline - timedelta(minutes=minutes_before)).strftime("%Y-%m-%dT%H:%M:%SZ")


def schedule(name: str, api: str, key: str, ids: pulumi.Output, minutes_before: int = 0, window: int = 0) -> None:
    aws.scheduler.Schedule(
        name,
        schedule_expression=f"at({moment(minutes_before)[:-1]})",
        flexible_time_window={"mode": "FLEXIBLE", "maximum_window_in_minutes": window} if window else {"mode": "OFF"},
        target={"arn": f"arn:aws:scheduler:::aws-sdk:ec2:{api}", "role_arn": role.arn,
                "input": ids.apply(lambda i: json.dumps({key: [i]}))},
    )


def instance(name: str, **spot: str) -> aws.ec2.Instance:
    return aws.ec2.Instance(
        name,
        ami="ami-0c1d2e3f405162738",
        instance_type="g5.xlarge",
        instance_market_options={"market_type": "spot", "spot_options": {
            "spot_instance_type": "persistent", "instance_interruption_behavior": "stop", **spot}},
        metadata_options={"http_tokens": "required"},
        root_block_device={"volume_size": 100, "encrypted": True},
        tags=tags(name),
    )


def terminate(inst: aws.ec2.Instance, minutes_before: int = 0, window: int = 0) -> None:
    schedule(f"{inst._name}-stop", "terminateInstances", "InstanceIds", inst.id, minutes_before, window)


def cancel(inst: aws.ec2.Instance, minutes_before: int, window: int = 0) -> None:
    schedule(f"{inst._name}-cancel", "cancelSpotInstanceRequests", "SpotInstanceRequestIds",
             inst.spot_instance_request_id, minutes_before, window)


terminate(instance("early", valid_until=expires), 30)
terminate(instance("late-end", valid_until=moment(10)))
flexstop = instance("flexstop")
terminate(flexstop, 30, window=26)
cancel(flexstop, 5)
flexcancel = instance("flexcancel")
terminate(flexcancel)
cancel(flexcancel, 10, window=10)
flexok = instance("flexok")
terminate(flexok, 5, window=5)
cancel(flexok, 10)

for name, behaviour in (("reclaimed", None), ("stopped", "stop")):
    request = aws.ec2.SpotInstanceRequest(
        name,
        ami="ami-0c1d2e3f405162738",
        instance_type="g5.xlarge",
        spot_type="persistent",
        instance_interruption_behavior=behaviour,
        wait_for_fulfillment=True,
        metadata_options={"http_tokens": "required"},
        root_block_device={"volume_size": 100, "encrypted": True},
        tags=tags(name),
    )
    schedule(f"{name}-stop", "terminateInstances", "InstanceIds", request.spot_instance_id)
    schedule(f"{name}-cancel", "cancelSpotInstanceRequests", "SpotInstanceRequestIds", request.id, 5)
