"""How long ``pulumi up`` waits for a baked image's system-disk snapshot and for the image made from it: one bound,
from the disk's size, for the program (``components/image_bake.py``) and the review's preconditions table
(``gpulease/review/preconditions.py``) alike.

The providers' defaults are too short for a GPU image's disk: terraform-provider-aws's ``aws_ebs_snapshot`` waits
``schema.DefaultTimeout(10 * time.Minute)`` for the snapshot to complete (internal/service/ec2/ebs_snapshot.go),
terraform-provider-alicloud's ``alicloud_ecs_snapshot`` ``5 * time.Minute`` for ``accomplished``
(alicloud/resource_alicloud_ecs_snapshot.go), and its ``alicloud_image`` "create - (Defaults to 10 mins)"
(website/docs/r/image.html.markdown, Timeouts). A first snapshot copies every written block, and neither cloud
documents a rate for a snapshot or for an image made from one, so the bound is the kit's own: 30 minutes plus one
a GiB (about 17 MiB/s at worst), at most 12 hours.
"""

from __future__ import annotations

BASE_MINUTES = 30
MINUTES_PER_GB = 1
MAX_MINUTES = 12 * 60


def create_minutes(root_disk_gb: int) -> int:
    """Minutes to wait for the snapshot of a ``root_disk_gb`` GiB system disk, and again for the image from it."""
    return min(BASE_MINUTES + MINUTES_PER_GB * max(0, int(root_disk_gb)), MAX_MINUTES)


def create_timeout(root_disk_gb: int) -> str:
    """``create_minutes`` as a Pulumi ``customTimeouts`` duration (``"110m"``)."""
    return f"{create_minutes(root_disk_gb)}m"
