"""The one place where gpulease's tag set meets Alibaba Cloud's tag rules.

The shared keys (``gpulease:owner`` ...) and values need no re-encoding on Alibaba Cloud: ECS and OSS accept
colons in keys and ``@`` in values, and ``gpulease:`` is not a reserved prefix. So the reaper and the policy
pack read Alibaba Cloud tags with the same ``gpulease.core.vocabulary`` keys as on AWS. What differs are the
limits (20 tags, 64-character keys on OSS, 128-character values, reserved ``aliyun``/``acs:`` prefixes): the spec
refuses user input that breaks them, and ``encode_tags`` checks the final set, computed values included,
before anything is registered.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING

import pulumi

from components.tagging import experiment_tags
from gpulease.core import vocabulary as v
from gpulease.core.errors import UserError

if TYPE_CHECKING:  # the spec's types only: at run time a cloud folder needs none of the spec's code
    from components.spec.experiment import ExperimentSpec



class TagError(UserError):
    """A tag Alibaba Cloud would refuse."""


def encode_tags(tags: Mapping[str, pulumi.Input[str]], *, stack: str, resource: str) -> dict[str, pulumi.Input[str]]:
    """The tags to send to Alibaba Cloud for ``tags``; raises ``TagError`` naming the stack and the tag."""
    problems = []
    if len(tags) > v.ALICLOUD_MAX_TAGS:
        problems.append(f"{len(tags)} tags on {resource}; Alibaba Cloud accepts at most {v.ALICLOUD_MAX_TAGS}")
    for key, value in tags.items():
        problem = v.alicloud_tag_problem(key, value if isinstance(value, str) else None)
        if problem:
            problems.append(problem)
    if problems:
        raise TagError(
            f"stack '{stack}': the tags of {resource} break Alibaba Cloud's rules: " + "; ".join(problems)
            + ". Shorten checkpoints.prefix or the values in tags."
        )
    return dict(tags)


# A stand-in for the recorded deadline while checking tags before anything is registered (same length).
_DEADLINE_PLACEHOLDER = "2000-01-01T00:00:00Z"


class AlicloudTags:
    """The tag part of the Alibaba Cloud cloud: every tag set is checked against its rules before it is sent."""

    def tagged(self, tags: dict[str, pulumi.Input[str]], *, stack: str, what: str) -> dict[str, pulumi.Input[str]]:
        return encode_tags(tags, stack=stack, resource=what)

    def check_tags(self, exp: ExperimentSpec, stack: str, checkpoint_uri: str) -> None:
        """The experiment's tag set as it will be, computed values included, before anything is registered."""
        probe = experiment_tags(exp, stack=stack, expires_at=_DEADLINE_PLACEHOLDER, checkpoint_uri=checkpoint_uri, retain=True)
        encode_tags(probe, stack=stack, resource=f"experiment {exp.name!r}")
