"""The AWS machine-learning compute forms (pulumi_aws): AWS Batch compute environments, SageMaker endpoints (with
their endpoint configurations), notebook instances and Studio apps. Argument names are the SDK's (engine form,
camelCase); every claim about what AWS does cites its source.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from typing import Any

from gpulease.core import resources as rt
from gpulease.core import vocabulary as v
from gpulease.core.compute.accelerators import hardware_of
from gpulease.core.compute.forms import (
    ON_DEMAND,
    SPOT,
    TEMPLATE,
    ComputeForm,
    Deadline,
    Market,
    TemplateRef,
    register,
)
from gpulease.core.compute.paths import UNKNOWN, Uncountable, count, read, read_all

SCHEDULER_DOC = "https://docs.aws.amazon.com/scheduler/latest/UserGuide/managing-targets-universal.html"
BATCH_DOC = "https://docs.aws.amazon.com/batch/latest/APIReference/API_UpdateComputeEnvironment.html"
BATCH_STATE_DOC = "https://docs.aws.amazon.com/batch/latest/APIReference/API_ComputeEnvironmentDetail.html"
SAGEMAKER_NO_SPOT = (
    "no spot market for it (SageMaker hosting and notebook instances are billed on-demand: "
    "https://aws.amazon.com/sagemaker/pricing/)"
)

BATCH_ENVIRONMENT = "aws:batch/computeEnvironment:ComputeEnvironment"
SAGEMAKER_ENDPOINT = "aws:sagemaker/endpoint:Endpoint"
SAGEMAKER_ENDPOINT_CONFIG = "aws:sagemaker/endpointConfiguration:EndpointConfiguration"
SAGEMAKER_NOTEBOOK = "aws:sagemaker/notebookInstance:NotebookInstance"
SAGEMAKER_APP = "aws:sagemaker/app:App"


def vcpu_capacity(max_vcpus: Any, types: list[Any], cloud: str = "aws") -> Any:
    """The most instances ``max_vcpus`` allows: the cap divided by the fewest vCPUs among the types (rounded up,
    AWS Batch may exceed the cap to fit an instance: ComputeResource.maxvCpus); ``UNKNOWN`` when the cap or a
    type's vCPUs are not known (a family name such as ``p4d``, or ``optimal``)."""
    cap = max_vcpus  # a count (``paths.count``): None, UNKNOWN, an Uncountable or a float
    if isinstance(cap, Uncountable):
        return cap
    if cap is UNKNOWN or cap is None or not types or any(t is UNKNOWN for t in types):
        return UNKNOWN
    vcpus = [hw[0] for t in types if (hw := hardware_of(cloud, t)) is not None]
    if len(vcpus) != len(types):
        return UNKNOWN
    return float(math.ceil(cap / min(vcpus)))


def batch_market(kind: Any, detail_key: str) -> Market:
    if kind is UNKNOWN:
        return Market(UNKNOWN)
    if kind is None:
        return Market(None)
    return Market(SPOT if kind in ("SPOT", "FARGATE_SPOT") else ON_DEMAND, f"{detail_key}={kind}")


def batch_deadlines(ids_key: str) -> tuple[Deadline, ...]:
    """A Scheduler call that stops a compute environment from running instances: maxvCpus 0 (the environment
    scales in to it), or DISABLED with minvCpus 0."""
    return (
        Deadline(kind="scheduler", target="arn:aws:scheduler:::aws-sdk:batch:updateComputeEnvironment",
                 ids_key=ids_key, requires={"ComputeResources.MaxvCpus": 0},
                 accepted="a one-time at(...) EventBridge Scheduler schedule calling batch:updateComputeEnvironment "
                 f"for it with ComputeResources.MaxvCpus 0, no later than its {v.TAG_EXPIRES_AT} tag",
                 source=f"{SCHEDULER_DOC}; {BATCH_DOC}"),
        Deadline(kind="scheduler", target="arn:aws:scheduler:::aws-sdk:batch:updateComputeEnvironment",
                 ids_key=ids_key, requires={"State": "DISABLED", "ComputeResources.MinvCpus": 0},
                 accepted="one setting State DISABLED with ComputeResources.MinvCpus 0 (a disabled managed "
                 "environment scales in to minvCpus once its instances are idle)",
                 source=BATCH_STATE_DOC),
    )


def batch_unsized(what: str) -> str:
    return (f"{what} counts vCPUs: its instances are the vCPU cap over the smallest type's vCPUs, unknown for a "
            "family name (p4d) or 'optimal', which the catalog cannot size")


def batch_metadata_gap(props: Mapping[str, Any]) -> str | None:
    if read(props, "computeResources") is None or read(props, "computeResources.launchTemplate") is not None:
        return None
    return ("a compute environment without a launch template cannot set metadata options (Batch launches its "
            "instances from the ECS-optimized image's defaults); accepted: compute_resources.launch_template naming "
            "a launch template with metadata_options={'http_tokens': 'required'}")


def batch_disk_gap(props: Mapping[str, Any]) -> str | None:
    if read(props, "computeResources") is None or read(props, "computeResources.launchTemplate") is not None:
        return None
    return ("its instances' volumes come from the image with no encryption setting in the compute environment (the "
            "account's EBS default decides, which a preview cannot see); accepted: compute_resources.launch_template "
            "naming a launch template with encrypted block_device_mappings")


def _batch_types(props: Mapping[str, Any]) -> list[Any]:
    return read_all(props, "computeResources.instanceTypes.*")


def endpoint_variants(props: Mapping[str, Any]) -> Any:
    """The most instances an endpoint configuration runs: each variant's initial count, or its managed scaling
    maximum when enabled (ProductionVariantManagedInstanceScaling)."""
    total = 0.0
    for path in ("productionVariants", "shadowProductionVariants"):
        for i, variant in enumerate(read_all(props, f"{path}.*")):
            if variant is UNKNOWN:
                return UNKNOWN
            if read(variant, "instanceType") is None:
                continue  # a serverless variant: no instances
            initial = count(variant, "initialInstanceCount", shown=f"{path}.{i}.initialInstanceCount")
            scaled = count(variant, "managedInstanceScaling.maxInstanceCount",
                           shown=f"{path}.{i}.managedInstanceScaling.maxInstanceCount")
            for size in (initial, scaled):
                if isinstance(size, Uncountable):
                    return size  # never a negative term that cancels another variant's instances
            if read(variant, "managedInstanceScaling.status") == "ENABLED" and scaled is not None:
                initial = scaled if initial is None or initial is UNKNOWN or scaled is UNKNOWN else max(initial, scaled)
            if initial is UNKNOWN or initial is None:
                return UNKNOWN
            total += initial
    return total


def _delete(action: str, ids_key: str, what: str) -> Deadline:
    return Deadline(kind="scheduler", target=f"arn:aws:scheduler:::aws-sdk:sagemaker:{action}", ids_key=ids_key,
                    accepted=f"a one-time at(...) EventBridge Scheduler schedule calling sagemaker:{action} for "
                    f"{what}, no later than its {v.TAG_EXPIRES_AT} tag", source=SCHEDULER_DOC)


def on_demand(props: Mapping[str, Any]) -> Market:
    return Market(ON_DEMAND, "SageMaker instances are on-demand")


register(
    ComputeForm(
        token=BATCH_ENVIRONMENT, cloud="aws", label="AWS Batch compute environment",
        type_reader=_batch_types,
        templates=(TemplateRef("computeResources.launchTemplate", "launchTemplateId", "launchTemplateName",
                               "computeResources", (rt.AWS_LAUNCH_TEMPLATE,)),),
        capacity=lambda props: vcpu_capacity(count(props, "computeResources.maxVcpus"), _batch_types(props)),
        desired=lambda props: vcpu_capacity(count(props, "computeResources.desiredVcpus"), _batch_types(props)),
        unsized=batch_unsized("computeResources.maxVcpus"),
        market=lambda props: batch_market(read(props, "computeResources.type"), "computeResources.type"),
        spot_how="compute_resources.type='SPOT'",
        metadata_gap=batch_metadata_gap, disk_gap=batch_disk_gap,
        deadlines=batch_deadlines("ComputeEnvironment"),
        decoys=(("state", "state=DISABLED set in the program stops new jobs from being placed, not at a time"),),
        identity=("id", "name", "arn"),
        source="pulumi_aws batch.ComputeEnvironment; https://docs.aws.amazon.com/batch/latest/APIReference/"
        "API_ComputeResource.html",
    ),
    ComputeForm(
        token=SAGEMAKER_ENDPOINT_CONFIG, cloud="aws", label="SageMaker endpoint configuration", role=TEMPLATE,
        instance_types=("productionVariants.*.instanceType", "shadowProductionVariants.*.instanceType"),
        capacity=endpoint_variants, market=on_demand,
        identity=("id", "name", "arn"),
        source="pulumi_aws sagemaker.EndpointConfiguration; https://docs.aws.amazon.com/sagemaker/latest/APIReference/"
        "API_ProductionVariant.html",
    ),
    ComputeForm(
        token=SAGEMAKER_ENDPOINT, cloud="aws", label="SageMaker endpoint",
        instance_types=(),
        templates=(TemplateRef("endpointConfigName", None, None, "endpointConfigName", (SAGEMAKER_ENDPOINT_CONFIG,)),),
        capacity_from_templates=True,
        unsized="its endpoint configuration is not in the stack, or a variant's count is not known",
        market=on_demand, spot_how=SAGEMAKER_NO_SPOT,
        deadlines=(_delete("deleteEndpoint", "EndpointName", "it"),),
        identity=("id", "name", "arn"),
        source="pulumi_aws sagemaker.Endpoint; https://docs.aws.amazon.com/sagemaker/latest/APIReference/"
        "API_DeleteEndpoint.html",
    ),
    ComputeForm(
        token=SAGEMAKER_NOTEBOOK, cloud="aws", label="SageMaker notebook instance",
        market=on_demand, spot_how=SAGEMAKER_NO_SPOT,
        deadlines=(_delete("stopNotebookInstance", "NotebookInstanceName", "it"),
                   _delete("deleteNotebookInstance", "NotebookInstanceName", "it")),
        identity=("id", "name", "arn"),
        source="pulumi_aws sagemaker.NotebookInstance; https://docs.aws.amazon.com/sagemaker/latest/APIReference/"
        "API_StopNotebookInstance.html",
    ),
    ComputeForm(
        token=SAGEMAKER_APP, cloud="aws", label="SageMaker Studio app",
        instance_types=("resourceSpec.instanceType",),
        market=on_demand, spot_how=SAGEMAKER_NO_SPOT,
        deadlines=(_delete("deleteApp", "AppName", "it (with its DomainId, AppType and user profile or space)"),),
        identity=("id", "appName", "arn"),
        source="pulumi_aws sagemaker.App; https://docs.aws.amazon.com/sagemaker/latest/APIReference/API_DeleteApp.html",
    ),
)
