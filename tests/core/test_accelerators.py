"""Which instance types the policy pack guards: every GPU / accelerator family of both clouds, no CPU family.

AWS is checked against every type of the installed botocore's EC2 ``InstanceType`` enum; the expected families
are written out by hand from the EC2 "Accelerated computing" page
(https://docs.aws.amazon.com/ec2/latest/instancetypes/ac.html), not derived from the patterns under test.
Alibaba Cloud has no type list in its SDK: its GPU families are the catalog's and the EGS naming page's
(https://www.alibabacloud.com/help/en/egs/instance-naming-conventions), its CPU families those of the ECS
instance family page (https://www.alibabacloud.com/help/en/ecs/user-guide/overview-of-instance-families).
"""

from __future__ import annotations

import botocore.session
import pytest

from gpulease.core import vocabulary as v
from gpulease.core.catalog import load_catalog
from gpulease.core.compute import is_accelerated

AWS_GPU_FAMILIES = {
    "cg1", "g2", "g3", "g3s", "g4ad", "g4dn", "g5", "g5g", "g6", "g6e", "g6f", "g7", "g7e", "gr6", "gr6f",
    "p2", "p3", "p3dn", "p4d", "p4de", "p5", "p5e", "p5en", "p6-b200", "p6-b300", "p6e-gb200",
}
AWS_OTHER_ACCELERATORS = {"dl1", "dl2q", "f1", "f2", "inf1", "inf2", "trn1", "trn1n", "trn2", "trn2u", "vt1"}


def aws_types() -> list[str]:
    return list(botocore.session.get_session().get_service_model("ec2").shape_for("InstanceType").enum)


def test_every_aws_type_is_judged_by_its_family():
    wrong = []
    for t in aws_types():
        family = t.split(".")[0]
        gpu, accelerated = family in AWS_GPU_FAMILIES, family in AWS_GPU_FAMILIES | AWS_OTHER_ACCELERATORS
        if v.is_gpu_instance_type(t) != gpu or is_accelerated(t) != accelerated:
            wrong.append(t)
    assert wrong == []
    # The enum carries the families the issue named, so the loop above did judge them.
    families = {t.split(".")[0] for t in aws_types()}
    assert {"trn1", "inf2", "dl1", "dl2q", "p6-b200", "g6e", "gr6", "g5g", "p5e", "p5en", "m7i", "c7g"} <= families


ALI_GPU = [
    "ecs.gn5-c4g1.xlarge", "ecs.gn5i-c2g1.large", "ecs.gn6v-c8g1.2xlarge", "ecs.gn6i-c4g1.xlarge",
    "ecs.gn6e-c12g1.3xlarge", "ecs.gn7-c12g1.3xlarge", "ecs.gn7i-c8g1.2xlarge", "ecs.gn7e-c16g1.4xlarge",
    "ecs.gn7r-c16g1.4xlarge", "ecs.gn8is.2xlarge", "ecs.gn8is-2x.8xlarge", "ecs.gn8v.4xlarge",
    "ecs.ebmgn6v.24xlarge", "ecs.ebmgn7e.32xlarge", "ecs.ebmgn7ex.32xlarge", "ecs.ebmgn8v.48xlarge",
    "ecs.sccgn6.24xlarge", "ecs.sccgn7ex.32xlarge", "ecs.ebmgi6s.26xlarge",  # Intel Server GPUs
    "ecs.vgn5i-m1.large", "ecs.vgn6i-m4-vws.xlarge", "ecs.vgn7i-vws-m4.xlarge", "ecs.sgn7i-vws-m2.xlarge",
]
ALI_OTHER_ACCELERATORS = ["ecs.f3-c4f1.xlarge", "ecs.f1-c8f1.2xlarge"]
ALI_CPU = [
    "ecs.g7.xlarge", "ecs.g8i.2xlarge", "ecs.g8a.4xlarge", "ecs.g6e.large", "ecs.g7ne.xlarge", "ecs.g7nex.8xlarge",
    "ecs.c7.large", "ecs.r7.xlarge", "ecs.ebmg7.32xlarge", "ecs.ebmc7.32xlarge", "ecs.sccg7.32xlarge",
    "ecs.hfg7.xlarge", "ecs.hfc7.large", "ecs.re6.13xlarge", "ecs.i4.xlarge", "ecs.d2s.5xlarge", "ecs.t6-c1m1.large",
    "ecs.u1-c1m2.large", "ecs.e-c1m1.large", "ecs.s6-c1m1.small", "ecs.ebmhfg7.48xlarge", "ecs.c8y.xlarge",
]


@pytest.mark.parametrize("instance_type", ALI_GPU)
def test_alibaba_gpu_families_including_two_suffix_names(instance_type):
    assert v.is_gpu_instance_type(instance_type) and is_accelerated(instance_type)


@pytest.mark.parametrize("instance_type", ALI_OTHER_ACCELERATORS)
def test_alibaba_fpga_families_are_accelerated_not_gpu(instance_type):
    assert is_accelerated(instance_type) and not v.is_gpu_instance_type(instance_type)


@pytest.mark.parametrize("instance_type", ALI_CPU)
def test_alibaba_cpu_families_are_not_accelerated(instance_type):
    assert not is_accelerated(instance_type)


def test_every_catalog_gpu_type_is_detected_by_its_name():
    """The catalog also guards its own types; the patterns alone must know each of them too."""
    gpus = [it.type for it in load_catalog().instances if it.gpu_count > 0]
    assert gpus and [t for t in gpus if not v.is_gpu_instance_type(t)] == []
