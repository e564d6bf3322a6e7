"""Pulumi mocks that answer like the clouds do: realistic ids, ARNs, zones and image lookups.

Ids are derived from a hash of the resource's type and name, so two renders of the same stack give the same
ids (stable reports and diffs) while different resources never share one.
"""

from __future__ import annotations

from datetime import datetime

import pulumi

from gpulease.core import resources as rt
from gpulease.review import (  # noqa: F401 - each registers its answers (or its models) into the registry
    lookups_alicloud,
    lookups_aws,
    lookups_policy_document,
    mocks_alicloud,
    mocks_aws,
    mocks_images,
    mocks_time,
    models,
)
from gpulease.review.invoke_sites import INVOKE_SITE, INVOKE_TYPE, REGISTRATION_SITE
from gpulease.review.lookup_args import LookupArgumentError, coerce_args
from gpulease.review.manifest_text import decode_inputs, gpu_note
from gpulease.review.mock_ids import ACCOUNT_ID, ALICLOUD_ACCOUNT_ID, _hex
from gpulease.review.mock_registry import CALLS, RESOURCES

__all__ = ["ACCOUNT_ID", "ALICLOUD_ACCOUNT_ID", "CALLS", "CloudMocks", "UnansweredLookup"]


class UnansweredLookup(Exception):  # noqa: N818 - it names what happened, as the message does
    """A lookup (invoke) the mocks have no answer for: the program cannot go on offline from there.

    Raised into the program at its call, and kept on the mocks so that a program that catches it is still
    reported: the review of what it registered is partial."""

    def __init__(self, token: str, site: str | None, note: str = ""):
        self.token, self.site = token, site
        where = f" at {site}" if site else ""
        super().__init__(
            f"the lookup {token}{where} has no offline answer (the review's mocks answer the common lookups of "
            "both clouds; see docs/policies.md#reviewing-any-pulumi-program), so the program stopped there; what "
            f"it registered before is reviewed, the rest is not{note}"
        )


class CloudMocks(pulumi.runtime.Mocks):
    """Answers for both clouds. ``region`` drives zones and ARNs; ``existing`` maps disk ids to zones."""

    def __init__(self, region: str | None = "us-east-1", existing_volumes: dict[str, str] | None = None,
                 now: datetime | None = None):
        # No region (a stack that configures none): ids still need one, but no answer names it (an ARN's region
        # is left empty), so nothing downstream prices the stack in a region the program never chose.
        self.region_given = region is not None
        self.region = region or "us-east-1"
        self.existing_volumes = existing_volumes or {}
        self.now = now
        self.calls: list[tuple[str, dict]] = []
        self.provider_regions: dict[str, str] = {}
        self.unanswered: Exception | None = None  # the first lookup without an answer (or with a bad argument)
        self.instances: list[str] = []
        """Every instance id answered so far (the ready records a bake lists: ``mocks_images``)."""
        self.ready = True
        """Whether those instances passed readiness (their ready records are listed)."""
        self.objects: list[str] = []
        """Object keys an earlier update wrote to the stack's bucket (listed by the bucket listings)."""

    # --- invokes -----------------------------------------------------------------------------------
    def call(self, args: pulumi.runtime.MockCallArgs) -> dict:
        self.calls.append((args.token, dict(args.args)))
        handler = CALLS.get(args.token)
        if handler is None:
            site = INVOKE_SITE.get()
            note = ""
            if args.token == "kubernetes:yaml:decode":  # started by a component's task: its registration's line
                note, site = gpu_note(decode_inputs(dict(args.args))), site or REGISTRATION_SITE.get()
            error = UnansweredLookup(args.token, site, note)
            self.unanswered = self.unanswered or error
            raise error
        try:
            arguments = coerce_args(args.token, dict(args.args), INVOKE_TYPE.get(), INVOKE_SITE.get())
        except LookupArgumentError as error:
            self.unanswered = self.unanswered or error
            raise
        # An explicit provider (a stack whose spec names another region) answers for its own region.
        region = self.provider_regions.get((args.provider or "").split("::")[-1])
        if region is None or region == self.region:
            return handler(self, arguments)
        default, self.region = self.region, region
        try:
            return handler(self, arguments)
        finally:
            self.region = default

    # --- resources ---------------------------------------------------------------------------------
    def new_resource(self, args: pulumi.runtime.MockResourceArgs) -> tuple[str | None, dict]:
        handler = RESOURCES.get(args.typ)
        inputs = dict(args.inputs)
        if args.typ.startswith("pulumi:providers:"):
            pid = f"{args.name}-provider-{_hex('provider', args.name, length=8)}"
            if inputs.get("region"):
                self.provider_regions[pid] = inputs["region"]
            return pid, inputs
        if handler is None:
            return f"{args.name}-id", inputs
        rid, extra = handler(self, args.name, inputs)
        if args.typ in (rt.AWS_INSTANCE, rt.ALI_INSTANCE):
            self.instances.append(rid)
        return rid, {**inputs, **extra}

    def arn(self, service: str, resource: str, region: bool = True, account: bool = True) -> str:
        named = self.region if region and self.region_given else ""
        return f"arn:aws:{service}:{named}:{ACCOUNT_ID if account else ''}:{resource}"
