"""g5 instances on persistent spot requests, each terminated at its deadline, with a cancelling schedule that is right
(``good``) or wrong in a way a dependency alone does not show:

- ``wrongreq`` names another request, ``instid`` the instance's id, ``twocancel`` its request and another (one bad id
  fails the whole call), ``otherkey`` a key the API does not read, ``dryrun`` a call that cancels nothing;
- ``onesec`` and ``thirtysec`` cancel less than the scheduler's 60 s precision before the termination;
- ``capspot`` and ``captype`` spell ``Spot`` and ``Persistent`` with a capital and have no cancel;
- ``ltinst`` takes its persistent request from an in-stack launch template and has no cancel;
- ``ltcancel`` takes it from a launch template too and cancels it by the instance's ``spot_instance_request_id``, which
  is empty offline for an instance whose market options are its template's (the mocks read no template);
- ``ltforeign`` takes it from a launch template and cancels a literal request id (``sir-00000000``): with the
  instance's own id empty, nothing confirms the literal is its request.
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


def at(seconds_before: int) -> str:
    return f"at({(deadline - timedelta(seconds=seconds_before)).strftime('%Y-%m-%dT%H:%M:%S')})"


def schedule(name: str, api: str, body: pulumi.Output, seconds_before: int = 0) -> None:
    aws.scheduler.Schedule(
        name,
        schedule_expression=at(seconds_before),
        flexible_time_window={"mode": "OFF"},
        target={"arn": f"arn:aws:scheduler:::aws-sdk:ec2:{api}", "role_arn": role.arn,
                "input": body.apply(json.dumps)},
    )


def instance(name: str, market: str = "spot", spot_type: str = "persistent") -> aws.ec2.Instance:
    inst = aws.ec2.Instance(
        name,
        ami="ami-0c1d2e3f405162738",
        instance_type="g5.xlarge",
        instance_market_options={"market_type": market, "spot_options": {
            "spot_instance_type": spot_type, "instance_interruption_behavior": "stop"}},
        metadata_options={"http_tokens": "required"},
        root_block_device={"volume_size": 100, "encrypted": True},
        tags=tags(name),
    )
    schedule(f"{name}-stop", "terminateInstances", inst.id.apply(lambda i: {"InstanceIds": [i]}))
    return inst


def cancel(name: str, inst: aws.ec2.Instance, body, seconds_before: int = 300) -> None:
    schedule(f"{name}-cancel", "cancelSpotInstanceRequests", pulumi.Output.all(inst.id, inst.spot_instance_request_id)
             .apply(lambda ids: body(*ids)), seconds_before)


own = lambda iid, rid: {"SpotInstanceRequestIds": [rid]}  # noqa: E731
cancel("good", instance("good"), own)
cancel("wrongreq", instance("wrongreq"), lambda iid, rid: {"SpotInstanceRequestIds": ["sir-00000000"]})
cancel("instid", instance("instid"), lambda iid, rid: {"SpotInstanceRequestIds": [iid]})
cancel("twocancel", instance("twocancel"), lambda iid, rid: {"SpotInstanceRequestIds": [rid, "sir-zzzzzzzz"]})
cancel("otherkey", instance("otherkey"), lambda iid, rid: {"SpotInstanceRequestId": [rid]})
cancel("dryrun", instance("dryrun"), lambda iid, rid: {"SpotInstanceRequestIds": [rid], "DryRun": True})
cancel("onesec", instance("onesec"), own, 1)
cancel("thirtysec", instance("thirtysec"), own, 30)
instance("capspot", market="Spot")
instance("captype", spot_type="Persistent")


def from_template(name: str, cancelled=False) -> aws.ec2.Instance:
    template = aws.ec2.LaunchTemplate(
        f"{name}-template",
        image_id="ami-0c1d2e3f405162738",
        instance_type="g5.xlarge",
        instance_market_options={"market_type": "spot", "spot_options": {
            "spot_instance_type": "persistent", "instance_interruption_behavior": "stop"}},
        metadata_options={"http_tokens": "required"},
        block_device_mappings=[{"device_name": "/dev/sda1", "ebs": {"volume_size": 100, "encrypted": "true"}}],
        tag_specifications=[{"resource_type": "instance", "tags": tags(name)}],
        tags=tags(name),
    )
    inst = aws.ec2.Instance(name, launch_template={"id": template.id, "version": "$Latest"},
                            root_block_device={"volume_size": 100, "encrypted": True}, tags=tags(name))
    schedule(f"{name}-stop", "terminateInstances", inst.id.apply(lambda i: {"InstanceIds": [i]}))
    if cancelled:
        cancel(name, inst, cancelled if callable(cancelled) else own)
    return inst


from_template("ltinst")
from_template("ltcancel", cancelled=True)
from_template("ltforeign", cancelled=lambda iid, rid: {"SpotInstanceRequestIds": ["sir-00000000"]})
