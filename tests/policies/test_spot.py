"""spot-only-with-checkpointing and spot-checkpoint-bucket."""

from __future__ import annotations

from gpulease.core import vocabulary as v
from tests.support.policy import (
    ALI_INSTANCE,
    AWS_INSTANCE,
    UNKNOWN,
    ali_checkpoint_bucket,
    ali_gpu,
    analyze,
    aws_budget,
    aws_gpu,
    aws_schedule_for,
    checkpoint_bucket,
    found,
    res,
    tags,
)


def _aws(gpu_inputs: dict, bucket: list | None = None) -> list:
    return [res(AWS_INSTANCE, "gpu", gpu_inputs), aws_schedule_for("gpu"),
            *(checkpoint_bucket() if bucket is None else bucket), aws_budget()]


def test_on_demand_gpu_without_reason_is_refused():
    result = analyze(*_aws(aws_gpu(instanceMarketOptions=None)))
    assert found(result, "spot-only-with-checkpointing") == [
        ("spot-only-with-checkpointing", "mandatory", "gpu",
         "Instance 'gpu' (g5.xlarge) is on-demand; accepted: instance_market_options.market_type=spot, or a "
         f"{v.TAG_ON_DEMAND_REASON} tag saying why it cannot run on spot")
    ]


def test_on_demand_with_a_reason_or_allowed_by_config_passes():
    reasoned = aws_gpu(instanceMarketOptions=None, tags=tags(reason="capacity reservation for a deadline"))
    assert found(analyze(*_aws(reasoned)), "spot-only-with-checkpointing") == []
    bare = aws_gpu(instanceMarketOptions=None)
    result = analyze(*_aws(bare), config={"spot-only-with-checkpointing": {"allowOnDemand": True}})
    assert found(result, "spot-only-with-checkpointing") == []


def test_alibaba_no_spot_strategy_is_on_demand():
    result = analyze(res(ALI_INSTANCE, "gpu", ali_gpu(spotStrategy="NoSpot")), *ali_checkpoint_bucket())
    (hit,) = found(result, "spot-only-with-checkpointing")
    assert hit[3].startswith("Instance 'gpu' (ecs.gn7i-c8g1.2xlarge) is on-demand; accepted: spotStrategy=SpotAsPriceGo")


def test_spot_without_checkpoint_uri():
    for missing in (None, v.NO_CHECKPOINTS):
        result = analyze(*_aws(aws_gpu(tags=tags(checkpoint=missing))))
        assert found(result, "spot-only-with-checkpointing") == [
            ("spot-only-with-checkpointing", "mandatory", "gpu",
             f"Instance 'gpu' runs on spot without a {v.TAG_CHECKPOINT_URI} tag naming its checkpoint bucket; an "
             "interruption would lose the work")
        ]


def test_checkpoint_bucket_must_be_in_the_stack():
    result = analyze(*_aws(aws_gpu(tags=tags(checkpoint="s3://somewhere-else/x/"))))
    (hit,) = found(result, "spot-checkpoint-bucket")
    assert hit[:3] == ("spot-checkpoint-bucket", "mandatory", "gpu")
    assert hit[3].startswith("Instance 'gpu' checkpoints to bucket 'somewhere-else', which is not in this stack")
    config = {"spot-checkpoint-bucket": {"externalBuckets": ["somewhere-else"]}}
    assert found(analyze(*_aws(aws_gpu(tags=tags(checkpoint="s3://somewhere-else/x/"))), config=config),
                 "spot-checkpoint-bucket") == []


def test_checkpoint_bucket_needs_versioning_and_lifecycle():
    bare = [r for r in checkpoint_bucket() if r.type in ("aws:s3/bucket:Bucket",
                                                            "aws:s3/bucketPublicAccessBlock:BucketPublicAccessBlock")]
    result = analyze(*_aws(aws_gpu(), bucket=bare))
    assert found(result, "spot-checkpoint-bucket") == [
        ("spot-checkpoint-bucket", "mandatory", "gpu",
         "Instance 'gpu' checkpoints to bucket 'ckpt-bucket', which lacks versioning enabled and an enabled "
         "lifecycle rule")
    ]


def test_settings_linked_by_dependency_when_the_bucket_name_is_unknown():
    # During preview a setting's `bucket` input (the bucket's id) is unknown; its dependency still links it.
    linked = []
    for r in checkpoint_bucket():
        if r.type != "aws:s3/bucket:Bucket":
            r.inputs = {**r.inputs, "bucket": UNKNOWN}
            r.outputs = dict(r.inputs)
        linked.append(r)
    assert [hit[0] for hit in found(analyze(*_aws(aws_gpu(), bucket=linked)))] == ["budget-prices-fresh"]


def test_alibaba_bucket_without_versioning():
    bucket, pab = ali_checkpoint_bucket()
    bucket.inputs = {**bucket.inputs, "versioning": {"status": "Suspended"}}
    bucket.outputs = dict(bucket.inputs)
    result = analyze(res(ALI_INSTANCE, "gpu", ali_gpu()), bucket, pab)
    (hit,) = found(result, "spot-checkpoint-bucket")
    assert hit[3] == "Instance 'gpu' checkpoints to bucket 'ali-ckpt', which lacks versioning enabled"
