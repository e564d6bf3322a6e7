"""Storage: encrypted disks, private buckets with lifecycle rules, data disks that outlive the stack.

``encrypted-storage`` (stack, mandatory): EBS volumes, Alibaba disks, OSS buckets, and the block devices of every
compute form and template (``gpulease.core.compute``: EC2 root and EBS block devices, launch-template and launch
configuration devices, spot fleet launch specifications, Alibaba system and data disks of instances, instance
sets, launch templates, ESS scaling configurations and ACK node pools) are encrypted; a form that creates a disk
it cannot encrypt (an EKS node group or an ECS instance set without a launch template) is reported with what
can. (S3 encrypts every bucket by default; account-level EBS default encryption is invisible to a preview, so it
is not assumed.)

``bucket-public-access-blocked`` (stack, mandatory): every bucket has a public access block in the stack
(AWS: all four flags; Alibaba: ``blockPublicAccess``), or an account-level block is in the stack, and no
public ACL is set on it.

``bucket-lifecycle-required`` (stack, advisory): every bucket has at least one enabled lifecycle rule.

``data-disk-retained`` (resource, mandatory): a data disk survives ``pulumi destroy`` and the instance's end.
The analyzer protocol carries ``protect`` but not ``retainOnDelete``, so a disk counts as retained when it is
protected or tagged ``gpulease:retain=true`` (what the components set together with ``retain_on_delete``);
``gpulease:retain=false`` is a reviewed opt-out (config ``allowOptOut``). Disks that die with the instance
(EC2 ``ebsBlockDevices`` with ``deleteOnTermination``, Alibaba ``deleteWithInstance`` on a disk, an inline data
disk or a disk attachment) are violations too.
``gpulease plan`` additionally checks that ``gpulease:retain=true`` comes with ``retain_on_delete``.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from pulumi_policy import (
    ReportViolation,
    ResourceValidationArgs,
    ResourceValidationPolicy,
    StackValidationArgs,
    StackValidationPolicy,
)

from gpulease.core import resources as rt
from gpulease.core import vocabulary as v
from gpulease.core.compute import Registered, form_of, read, read_all
from gpulease.core.compute.cloudformation import STACK as CLOUDFORMATION_STACK
from gpulease.core.compute.template_values import not_judged, variants
from gpulease.core.compute.units import embedded

from . import buckets
from . import common as c
from .taggable import is_taggable

ENCRYPTED_TYPES = (*rt.DATA_DISK_TYPES, *c.UNIT_TYPES)


def _unencrypted(resource_type: str, props: Any, require_key: bool,
                 dependencies: Mapping[str, Any] | None = None, covered: bool = False) -> list[str]:
    """Which storage of one resource is not encrypted (empty when all of it is, or cannot be known).

    ``dependencies`` (per input, the resources it depends on) tells that a form launches from a template even when
    the reference is an output not known during preview (``launch_template_id=template.id``)."""
    found: list[str] = []

    def check(label: str, flag: Any, key: Any = None) -> None:
        if flag is c.UNKNOWN:
            return
        if not rt.flag(flag):
            found.append(f"{label} is not encrypted")
        elif require_key and not key:
            found.append(f"{label} is encrypted with the default key, not a customer-managed key")

    if resource_type == rt.AWS_VOLUME or resource_type in rt.ALI_DISKS:
        check("the volume" if resource_type == rt.AWS_VOLUME else "the disk", c.known(props, "encrypted"),
              c.known(props, "kmsKeyId"))
        return found
    form = form_of(resource_type)
    if form is None:
        return found
    data = c.plain(props)
    names_template = any(read_all(data, ref.path) or (dependencies or {}).get(ref.dependency) for ref in form.templates)
    for disk in form.disks:
        if "*" in disk.path:
            devices = read_all(data, disk.path)
        elif disk.path:
            device = read(data, disk.path)
            if device is None and names_template:
                continue  # the template it launches from sets it (and is judged itself)
            devices = [device if device is not None else {}]
        elif names_template and read(data, disk.encrypted) is None:
            continue  # settings on the resource itself, left to the template it launches from
        else:
            devices = [data]
        judged = [dev for dev in devices if dev is c.UNKNOWN or not disk.only_with
                  or read(dev, disk.only_with) is not None]
        if disk.missing and "*" in disk.path and not judged and not names_template and not covered:
            found.append(disk.missing)  # the image's own mappings decide: not asserted, as for an instance
        for i, dev in enumerate(devices):
            if dev is c.UNKNOWN or (disk.only_with and read(dev, disk.only_with) is None):
                continue
            label = disk.label if "*" not in disk.path else f"{disk.label}[{i}]"
            name = read(dev, disk.name_key) if disk.name_key else None
            check(f"{label} ({name})" if name_key_shown(name) else label, read(dev, disk.encrypted),
                  read(dev, disk.kms_key))
    gap = form.disk_gap(data)
    if gap:
        found.append(gap)
    return found


def _covered_templates(resources: list) -> set[str]:
    """Templates whose missing block device mappings do not matter: every form launching from them sets its own
    root device (an instance with ``root_block_device`` and a launch template for its network interfaces).
    Computed only when a template lacks its mappings."""
    lacking = [r for r in resources if (form := form_of(r.resource_type)) is not None and any(
        d.missing and not read_all(c.plain(r.props), d.path) for d in form.disks)]
    if not lacking:
        return set()
    users: dict[str, list[bool]] = {}
    for unit, _ in c.units(resources):
        own = [d for d in unit.form.disks if d.path and "*" not in d.path]
        sets_own = bool(own) and all(read(unit.resource.props, d.path) is not None for d in own)
        for tpl in unit.templates:
            users.setdefault(tpl.urn, []).append(sets_own)
    return {urn for urn, sets in users.items() if sets and all(sets)}


def name_key_shown(name: Any) -> bool:
    return isinstance(name, str) and bool(name)


def _encrypted_storage(args: StackValidationArgs, report: ReportViolation) -> None:
    require_key = bool(c.config_value(args.get_config(), "requireCustomerKey", False))
    covered = _covered_templates(args.resources)
    for r in args.resources:
        problems = _unencrypted(r.resource_type, r.props, require_key, c.registered(r).dependencies,
                                r.urn in covered)
        if problems:
            report(f"{c.display(r.resource_type, r.name)}: {'; '.join(problems)}", r.urn)
        if r.resource_type == CLOUDFORMATION_STACK:
            _template_storage(r, require_key, report)
    for facts in buckets.bucket_facts(args.resources):
        if facts.resource.resource_type == rt.ALI_BUCKET and facts.encrypted is False:
            r = facts.resource
            report(f"{c.display(r.resource_type, r.name)} has no server-side encryption (serverSideEncryptionRule or "
                   "a BucketServerSideEncryption resource)", r.urn)


def _template_storage(stack: Any, require_key: bool, report: ReportViolation) -> None:
    """What a CloudFormation stack's template creates (an AWS::EC2::LaunchTemplate, an AWS::EC2::Instance), judged
    as the same resource in the stack would be; reported on the stack, named ``LaunchTemplate 'stack/LogicalId'``
    as the other rules name what a template creates."""
    inner = embedded(c.registered(stack))
    covered = _covered_templates([_Embedded(e) for e in inner])
    for e in inner:
        form = form_of(e.type)
        settings = [f"{d.path}.{d.encrypted}" if d.path else d.encrypted for d in (form.disks if form else ())]
        chosen, opaque = variants(e, settings)
        problems = list(dict.fromkeys(p for props in (e.props, *chosen)
                                      for p in _unencrypted(e.type, props, require_key, e.dependencies, e.urn in covered)))
        if problems:
            report(f"{c.display(e.type, e.name)}: {'; '.join(problems)}", stack.urn)
        if opaque:
            report(not_judged(c.display(e.type, e.name), opaque, "whether its volumes are encrypted"), stack.urn)


class _Embedded:
    """A template's resource in the shape of a policy resource, for ``_covered_templates``."""

    def __init__(self, e: Registered):
        self.resource_type, self.name, self.urn, self.props = e.type, e.name, e.urn, e.props
        self.property_dependencies: dict[str, Any] = {}


encrypted_storage = c.judges(StackValidationPolicy(
    name="encrypted-storage",
    description="Disks, instance block devices and buckets are encrypted at rest.",
    validate=_encrypted_storage,
    enforcement_level=c.level("mandatory"),
    config_schema=c.schema(
        {
            "requireCustomerKey": {"type": "boolean", "default": False,
                                   "description": "Also require a customer-managed KMS key on disks."},
        }
    ),
), (*ENCRYPTED_TYPES, *buckets.BUCKET_FACT_TYPES))


def _public_access(args: StackValidationArgs, report: ReportViolation) -> None:
    account_level = bool(c.config_value(args.get_config(), "acceptAccountLevelBlock", True))
    for facts in buckets.bucket_facts(args.resources, account_level=account_level):
        r = facts.resource
        what = c.display(r.resource_type, r.name)
        if facts.public_acls:
            report(f"{what} is public: {', '.join(facts.public_acls)}; accepted: private", r.urn)
        if facts.access_blocked is False:
            aws = r.resource_type in rt.AWS_BUCKETS
            if facts.block_present:
                # A block exists, its flags off: say which, not that there is none.
                accepted = "all four flags true" if aws else "blockPublicAccess=true"
                report(f"{what} has a public access block with {', '.join(facts.block_gaps)} off; accepted: "
                       f"{accepted}", r.urn)
            else:
                kind = "BucketPublicAccessBlock" if aws else "BucketPublicAccessBlock with blockPublicAccess=true"
                report(f"{what} has no public access block; accepted: a {kind} for it in the stack", r.urn)


bucket_public_access_blocked = c.judges(StackValidationPolicy(
    name="bucket-public-access-blocked",
    description="Buckets block public access and carry no public ACL.",
    validate=_public_access,
    enforcement_level=c.level("mandatory"),
    config_schema=c.schema(
        {
            "acceptAccountLevelBlock": {"type": "boolean", "default": True,
                                        "description": "An account-level public access block in the stack covers "
                                        "every bucket."},
        }
    ),
), buckets.BUCKET_FACT_TYPES)


def _checkpoint_buckets(resources: list) -> set[str]:
    """The buckets a checkpoint-uri tag in the stack names (the kit's checkpoint buckets)."""
    names = set()
    for r in resources:
        parsed = c.checkpoint_bucket(c.tags_of(r.props, r.provider).get(v.TAG_CHECKPOINT_URI))
        if parsed is not None:
            names.add(parsed[1])
    return names


def _lifecycle(args: StackValidationArgs, report: ReportViolation) -> None:
    require_abort = bool(c.config_value(args.get_config(), "requireAbortIncompleteUploads", False))
    checkpoints = _checkpoint_buckets(args.resources)
    for facts in buckets.bucket_facts(args.resources):
        r = facts.resource
        # Checkpoints are spoken of only on a bucket a checkpoint-uri tag names; any other bucket holds objects.
        held = "old checkpoints" if facts.name in checkpoints else "old objects"
        parts = "checkpoint uploads" if facts.name in checkpoints else "uploads"
        if facts.lifecycle is False:
            report(f"{c.display(r.resource_type, r.name)} has no enabled lifecycle rule: {held} and "
                   "noncurrent versions are kept (and billed) forever", r.urn)
        elif require_abort and facts.aborts_uploads is False:
            report(f"{c.display(r.resource_type, r.name)} has no enabled rule aborting incomplete multipart uploads: "
                   f"parts of interrupted {parts} are billed forever", r.urn)


bucket_lifecycle_required = c.judges(StackValidationPolicy(
    name="bucket-lifecycle-required",
    description="Buckets expire old objects through at least one enabled lifecycle rule.",
    validate=_lifecycle,
    enforcement_level=c.level("advisory"),
    config_schema=c.schema(
        {
            "requireAbortIncompleteUploads": {"type": "boolean", "default": False,
                                              "description": "Also require a rule aborting incomplete multipart "
                                              "uploads."},
        }
    ),
), lambda type_: type_ in buckets.BUCKET_FACT_TYPES or is_taggable(type_))  # checkpoint-uri tags name buckets


def _retained(args: ResourceValidationArgs, report: ReportViolation) -> None:
    allow_opt_out = bool(c.config_value(args.get_config(), "allowOptOut", True))
    what = c.display(args.resource_type, args.name)
    props = args.props
    if args.resource_type in rt.DATA_DISK_TYPES:
        tags = c.tags_of(props, args.provider)
        if tags.get(v.TAG_RETAIN) is c.UNKNOWN:
            return
        # An unreadable retain tag is no declaration either way: the disk must be protected or declared retained.
        declared = rt.retain_tag(tags)
        opted_out = allow_opt_out and declared is False
        if args.resource_type != rt.AWS_VOLUME and rt.flag(c.known(props, "deleteWithInstance")) and not opted_out:
            report(f"{what} has deleteWithInstance=true: it is released together with its instance")
        if not (args.opts.protect or declared is True or opted_out):
            report(f"{what} would be deleted by pulumi destroy; accepted: retain_on_delete=True with tag "
                   f"{v.TAG_RETAIN}=true, protect=True" + (f", or an explicit {v.TAG_RETAIN}=false" if allow_opt_out
                                                          else ""))
    elif args.resource_type in rt.AWS_INSTANCES:
        for i, dev in enumerate(c.items(props, "ebsBlockDevices")):
            if dev is not c.UNKNOWN and c.known(dev, "deleteOnTermination", default=True) is True:
                report(f"{what}: ebsBlockDevices[{i}] ({c.known(dev, 'deviceName')}) is deleted when the instance "
                       "terminates; accepted: a separate retained aws.ebs.Volume, or deleteOnTermination=false")
    elif args.resource_type in rt.ALI_DISK_ATTACHMENTS:
        if rt.flag(c.known(props, "deleteWithInstance")):
            report(f"{what} has deleteWithInstance=true: the attached disk is released together with the instance")
    elif args.resource_type == rt.ALI_INSTANCE:
        for i, disk in enumerate(c.items(props, "dataDisks")):
            if disk is not c.UNKNOWN and c.known(disk, "deleteWithInstance", default=True) is True:
                report(f"{what}: dataDisks[{i}] is released with the instance; accepted: a separate retained "
                       "alicloud.ecs.EcsDisk, or deleteWithInstance=false")


def retention_option_problem(
    resource_type: str, name: str, tags: Mapping[str, Any], *, retain_on_delete: bool, protect: bool
) -> str | None:
    """The half of ``data-disk-retained`` that only ``gpulease plan`` can judge: a disk tagged
    ``gpulease:retain=true`` must be registered with ``retain_on_delete`` (or ``protect``), else ``pulumi destroy``
    deletes it whatever the tag says. The analyzer protocol does not carry that option (``AnalyzerResourceOptions``
    has protect, ignoreChanges, deleteBeforeReplace, aliases, timeouts, parent: pulumi/proto/analyzer.proto), so
    the offline review, which captured the registration, calls this for each resource."""
    if resource_type not in rt.DATA_DISK_TYPES or rt.retain_tag(tags) is not True or retain_on_delete or protect:
        return None
    return (f"{c.display(resource_type, name)} is tagged {v.TAG_RETAIN}=true but registered without retain_on_delete "
            "or protect: pulumi destroy would delete it")


data_disk_retained = c.judges(ResourceValidationPolicy(
    name="data-disk-retained",
    description="Data disks outlive the instance and the stack unless the opt-out is explicit.",
    validate=_retained,
    enforcement_level=c.level("mandatory"),
    config_schema=c.schema(
        {
            "allowOptOut": {"type": "boolean", "default": True,
                            "description": f"Accept a disk tagged {v.TAG_RETAIN}=false (deleted on purpose)."},
        }
    ),
), (*rt.DATA_DISK_TYPES, *rt.AWS_INSTANCES, rt.ALI_INSTANCE, *rt.ALI_DISK_ATTACHMENTS))

POLICIES = [encrypted_storage, bucket_public_access_blocked, bucket_lifecycle_required, data_disk_retained]
