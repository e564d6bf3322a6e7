"""The task definition and service the awsx ECS components create (pulumi/pulumi-awsx, awsx/ecs/fargateService.ts,
ec2Service.ts, fargateTaskDefinition.ts, ec2TaskDefinition.ts), shared by ``awsx_fargate_service`` and
``awsx_ec2_service``: a log group, an execution role, the ``aws:ecs/taskDefinition:TaskDefinition`` (its containers
as the JSON ``containerDefinitions``; Fargate's default size 256 CPU units and 512 MiB) and the
``aws:ecs/service:Service``. Outputs (pulumi_awsx/ecs/*_service.py): ``service`` and ``taskDefinition`` as
resources. Not modelled: the task role's policies and the load balancers' target wiring."""

from __future__ import annotations

import json
from typing import Any

from gpulease.review.mock_registry import ComponentBuild

_ASSUME_TASKS = json.dumps({"Version": "2012-10-17", "Statement": [
    {"Effect": "Allow", "Principal": {"Service": "ecs-tasks.amazonaws.com"}, "Action": "sts:AssumeRole"}]})


def _containers(args: dict[str, Any]) -> dict[str, Any]:
    if args.get("container"):
        return {"container": args["container"]}
    return dict(args.get("containers") or {})


def service(b: ComponentBuild, launch_type: str) -> dict[str, Any]:
    name, i = b.name, b.inputs
    task_arn = i.get("taskDefinition")
    task = None
    args = i.get("taskDefinitionArgs")
    if args:
        logs = b.child("aws:cloudwatch/logGroup:LogGroup", name, {"retentionInDays": 7})
        role = b.child("aws:iam/role:Role", f"{name}-execution", {"assumeRolePolicy": _ASSUME_TASKS})
        containers = [{"name": key, "essential": True, **value} for key, value in _containers(args).items()]
        fargate = launch_type == "FARGATE"
        cpu = args.get("cpu") or (str(sum(int(c.get("cpu") or 0) for c in containers) or 256) if fargate else None)
        memory = args.get("memory") or (str(sum(int(c.get("memory") or 0) for c in containers) or 512)
                                        if fargate else None)
        task = b.child("aws:ecs/taskDefinition:TaskDefinition", name, {
            "family": args.get("family") or name, "cpu": cpu, "memory": memory,
            "networkMode": args.get("networkMode") or "awsvpc",
            "requiresCompatibilities": [launch_type], "executionRoleArn": role.outputs.get("arn"),
            "containerDefinitions": json.dumps([
                {**c, "logConfiguration": {"logDriver": "awslogs", "options": {
                    "awslogs-group": logs.id, "awslogs-region": b.region, "awslogs-stream-prefix": c["name"]}}}
                for c in containers]),
            "runtimePlatform": args.get("runtimePlatform"), "volumes": args.get("volumes"),
        }, depends={"executionRoleArn": [role]})
        task_arn = task.outputs.get("arn") or task.id
    network = i.get("networkConfiguration")
    if launch_type == "FARGATE" and network is None:
        network = {"assignPublicIp": bool(i.get("assignPublicIp")), "subnets": []}
    svc = b.child("aws:ecs/service:Service", name, {
        "cluster": i.get("cluster"), "launchType": None if i.get("capacityProviderStrategies") else launch_type,
        "capacityProviderStrategies": i.get("capacityProviderStrategies"),
        "desiredCount": i.get("desiredCount") if i.get("desiredCount") is not None else 1,
        "taskDefinition": task_arn, "networkConfiguration": network, "loadBalancers": i.get("loadBalancers"),
        "deploymentCircuitBreaker": i.get("deploymentCircuitBreaker"), "tags": i.get("tags"),
        "waitForSteadyState": i.get("continueBeforeSteadyState") is not True,
    }, depends={"taskDefinition": [task]} if task else None)
    return {"service": svc.ref(), "taskDefinition": task.ref() if task else None}
