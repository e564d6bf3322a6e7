"""Who may reach a stack's data and what its instances may do: bucket policies and instance roles.

``bucket-policy-public`` (resource, mandatory): no bucket policy (AWS ``aws.s3.BucketPolicy`` or a bucket's inline
``policy``; Alibaba ``alicloud.oss.BucketPolicy``) has an ``Allow`` statement for ``Principal: "*"`` (or
``{"AWS": "*"}``) unless a condition pins it to fixed values of a key S3 treats as trusted (``aws:SourceIp``,
``aws:SourceArn``, ``aws:SourceVpc``, ``aws:SourceVpce``, ``aws:SourceOwner``, ``aws:SourceAccount``,
``aws:userid``, ``s3:x-amz-server-side-encryption-aws-kms-key-id``: "Amazon S3 considers a bucket policy public
unless ...", botocore's S3 model, PublicAccessBlockConfiguration;
https://docs.aws.amazon.com/AmazonS3/latest/userguide/access-control-block-public-access.html); on OSS,
``acs:SourceIp`` or ``acs:SourceVpc``. A ``Deny`` for everyone is fine (the kit denies plain HTTP that way).

``instance-role-wildcard`` (stack, mandatory): a role instances assume (an IAM role trusting
``ec2.amazonaws.com``, a RAM role trusting ``ecs.aliyuncs.com``) is granted no ``Allow`` with ``Action: "*"``, a
``NotAction``, or a service-wide action (``s3:*``) on ``Resource: "*"``, through its inline policies, a
``RolePolicy``, or an attached policy of the stack; nor the clouds' own AdministratorAccess / PowerUserAccess /
IAMFullAccess policies. Whoever runs code on a GPU instance holds its role. (``Resource: "*"`` with named actions
is left alone: many read-only actions support no resource-level permissions.)
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Mapping
from typing import Any

from pulumi_policy import (
    ReportViolation,
    ResourceValidationArgs,
    ResourceValidationPolicy,
    StackValidationArgs,
    StackValidationPolicy,
)

from gpulease.core import resources as rt
from gpulease.core.compute import UNKNOWN, read, read_all
from gpulease.core.compute.units import Registered

from . import common as c

TRUSTED_CONDITION_KEYS = frozenset({
    "aws:sourceip", "aws:sourcearn", "aws:sourcevpc", "aws:sourcevpce", "aws:sourceowner", "aws:sourceaccount",
    "aws:userid", "s3:x-amz-server-side-encryption-aws-kms-key-id", "acs:sourceip", "acs:sourcevpc",
})
BUCKET_POLICY_TYPES = (rt.AWS_BUCKET_POLICY, *rt.AWS_BUCKETS, rt.ALI_BUCKET_POLICY)
BROAD_MANAGED_POLICIES = ("AdministratorAccess", "PowerUserAccess", "IAMFullAccess")
INSTANCE_PRINCIPALS = ("ec2.amazonaws.com", "ecs.aliyuncs.com")


def _document(raw: Any) -> Mapping[str, Any] | None:
    if isinstance(raw, Mapping):
        return raw
    if not isinstance(raw, str) or not raw.strip():
        return None
    try:
        doc = json.loads(raw)
    except ValueError:
        return None
    return doc if isinstance(doc, Mapping) else None


def _list(value: Any) -> list[Any]:
    if value is None:
        return []
    return list(value) if isinstance(value, list | tuple) else [value]


def statements(raw: Any) -> list[Mapping[str, Any]]:
    """The statements of a policy document (JSON text or an object)."""
    doc = _document(raw)
    if doc is None:
        return []
    return [s for s in _list(doc.get("Statement")) if isinstance(s, Mapping)]


def _everyone(principal: Any) -> bool:
    if principal == "*":
        return True
    if isinstance(principal, list | tuple):
        return "*" in principal
    if isinstance(principal, Mapping):
        return any("*" in _list(principal.get(k)) for k in ("AWS", "RAM", "*"))
    return False


def _pinned(condition: Any) -> bool:
    """A condition that pins the caller to fixed trusted values (no ``*`` in them, no ``...Like`` wildcard)."""
    if not isinstance(condition, Mapping):
        return False
    for operator, tests in condition.items():
        if not isinstance(tests, Mapping):
            continue
        for key, values in tests.items():
            if str(key).lower() not in TRUSTED_CONDITION_KEYS:
                continue
            if "like" in str(operator).lower() and any("*" in str(x) for x in _list(values)):
                continue
            if str(key).lower().endswith("sourceip") and any(str(x) in ("0.0.0.0/0", "::/0") for x in _list(values)):
                continue
            return True
    return False


def public_statements(raw: Any) -> list[str]:
    """``"Allow s3:GetObject"`` for each statement that lets anyone in."""
    out = []
    for st in statements(raw):
        if st.get("Effect") != "Allow" or not _everyone(st.get("Principal")) or _pinned(st.get("Condition")):
            continue
        actions = ", ".join(str(a) for a in _list(st.get("Action") or st.get("NotAction"))) or "every action"
        out.append(f"{st.get('Sid') or 'a statement'} allows {actions} to everyone")
    return out


def _bucket_policy(args: ResourceValidationArgs, report: ReportViolation) -> None:
    if args.resource_type not in BUCKET_POLICY_TYPES or c.listed(args.get_config(), "acceptPublic", args.urn):
        return
    raw = c.plain(c.known(args.props, "policy"))
    if raw is UNKNOWN or raw is None:
        return
    found = public_statements(raw)
    if found:
        report(f"{c.display(args.resource_type, args.name)}: {'; '.join(found)} (Principal \"*\" with no condition "
               "pinning it to your addresses, VPC, account or source ARN); accepted: named principals, a Deny, or "
               "such a condition")


bucket_policy_public = c.judges(ResourceValidationPolicy(
    name="bucket-policy-public",
    description="No bucket policy allows everyone (Principal \"*\") without a condition pinning the caller.",
    validate=_bucket_policy,
    enforcement_level=c.level("mandatory"),
    config_schema=c.schema(
        {
            "acceptPublic": {"type": "array", "items": {"type": "string"}, "default": [],
                             "description": "Bucket or bucket-policy resources accepted as public after review: " + c.ACCEPT_FORMS},
        }
    ),
), BUCKET_POLICY_TYPES)


# --- instance roles --------------------------------------------------------------------------------------------


def _listing(action: str) -> bool:
    """Describe* / List* calls: many support no resource-level permission, so ``Resource "*"`` is their only form
    (e.g. ec2:DescribeInstances, https://docs.aws.amazon.com/service-authorization/latest/reference/
    list_amazonec2.html; ecs:DescribeInstances, https://www.alibabacloud.com/help/en/ram/developer-reference/
    ram-authorization-rules-for-ecs)."""
    verb = action.split(":", 1)[-1]
    return verb.startswith(("Describe", "List"))


def broad_grants(raw: Any) -> list[str]:
    """Why a policy document grants too much: ``Action "*"``, ``NotAction``, any action but a Describe / List call on
    ``Resource "*"`` (``s3:GetObject`` on every bucket of the account)."""
    out = []
    for st in statements(raw):
        if st.get("Effect") != "Allow":
            continue
        actions = [str(a) for a in _list(st.get("Action"))]
        resources = [str(r) for r in _list(st.get("Resource"))]
        if "*" in actions:
            out.append('Action "*"')
        elif st.get("NotAction") is not None:
            out.append(f"NotAction {_list(st.get('NotAction'))} (everything else)")
        elif "*" in resources and (wide := [a for a in actions if not _listing(a)]):
            out.append(f'{", ".join(wide)} on Resource "*"')
    return out


def _trusts_instances(role: Registered) -> bool:
    if any(s in INSTANCE_PRINCIPALS for s in read_all(role.props, "services.*")):  # alicloud ram.Role services
        return True
    doc = read(role.props, "assumeRolePolicy") if role.type == rt.AWS_IAM_ROLE else (
        read(role.props, "assumeRolePolicyDocument") or read(role.props, "document"))
    for st in statements(doc):
        principal = st.get("Principal")
        services = principal.get("Service") if isinstance(principal, Mapping) else None
        if any(s in INSTANCE_PRINCIPALS for s in _list(services)):
            return True
    return False


def _role_names(role: Registered) -> set[str]:
    keys = ("name", "id", "arn") if role.type == rt.AWS_IAM_ROLE else ("roleName", "name", "id", "arn")
    return {x for k in keys if isinstance(x := read(role.props, k), str)}


_HOLDERS = {rt.AWS_IAM_ROLE_POLICY: "role", rt.AWS_IAM_ROLE_POLICY_ATTACHMENT: "role",
            rt.AWS_IAM_POLICY_ATTACHMENT: "roles", rt.ALI_RAM_ROLE_POLICY_ATTACHMENT: "roleName"}
"""The resources that grant a role a policy, and the input naming the role (one name, or a list of them)."""


class _Grants:
    """The stack's grants indexed once for every role: each role policy or attachment by the role it names (a
    dependency's URN or a name, id or ARN in its input), and each managed policy by its ARN, so that judging every
    role of a sweep is linear in the stack, not in its square. Stack order is kept (the messages depend on it)."""

    def __init__(self, stack: list[Registered]):
        self.stack = stack
        self.by_dependency: dict[str, list[int]] = {}
        self.by_name: dict[str, list[int]] = {}
        self.policies = {t: [r for r in stack if r.type == t] for t in (rt.AWS_IAM_POLICY, rt.ALI_RAM_POLICY)}
        # Per policy type: by URN (a dependency), by identity (refers), by the values an attachment's input is
        # compared with (AWS: the ARN, a string; Alibaba Cloud: policyName and name, whatever they hold).
        self.by_urn: dict[str, dict[str, list[int]]] = {t: {} for t in self.policies}
        self.by_identity: dict[str, dict[str, list[int]]] = {t: {} for t in self.policies}
        self.by_value: dict[str, dict[Any, list[int]]] = {t: {} for t in self.policies}
        for t, policies in self.policies.items():
            for i, policy in enumerate(policies):
                self.by_urn[t].setdefault(policy.urn, []).append(i)
                for identity in policy.identities():
                    self.by_identity[t].setdefault(identity, []).append(i)
                values = [read(policy.props, "arn")] if t == rt.AWS_IAM_POLICY else [
                    read(policy.props, "policyName"), read(policy.props, "name")]
                for value in dict.fromkeys(x for x in values if _hashable(x) and (t != rt.AWS_IAM_POLICY
                                                                                   or isinstance(x, str))):
                    self.by_value[t].setdefault(value, []).append(i)
        for i, r in enumerate(stack):
            key = _HOLDERS.get(r.type)
            if key is None:
                continue
            for urn in dict.fromkeys(r.dependencies.get(key, ())):
                self.by_dependency.setdefault(urn, []).append(i)
            value = read(r.props, key)
            for name in dict.fromkeys(x for x in (value if isinstance(value, list) else [value]) if isinstance(x, str)):
                self.by_name.setdefault(name, []).append(i)

    def holders(self, role: Registered) -> list[Registered]:
        """The role policies and attachments linked to ``role``, in stack order."""
        found = set(self.by_dependency.get(role.urn, ()))
        for name in _role_names(role):
            found.update(self.by_name.get(name, ()))
        return [self.stack[i] for i in sorted(found)]

    def managed(self, arn: Any) -> list[Registered]:
        """The stack's managed policies whose ARN is ``arn``."""
        policies = self.policies[rt.AWS_IAM_POLICY]
        return [policies[i] for i in self.by_value[rt.AWS_IAM_POLICY].get(arn, ())] if isinstance(arn, str) else []

    def attached(self, t: str, holder: Registered, value: Any, dependency: str) -> list[Registered]:
        """The policies of type ``t`` that ``holder``'s input ``dependency`` (``value``) names: by a dependency on
        it, by its identity (``refers``) or by its ARN / name, in stack order."""
        found: set[int] = set()
        for urn in holder.dependencies.get(dependency, ()):
            found.update(self.by_urn[t].get(urn, ()))
        if isinstance(value, str):
            found.update(self.by_identity[t].get(value, ()))
        if _hashable(value) and (t != rt.AWS_IAM_POLICY or isinstance(value, str)):
            found.update(self.by_value[t].get(value, ()))
        return [self.policies[t][i] for i in sorted(found)]


def _hashable(value: Any) -> bool:
    try:
        hash(value)
    except TypeError:
        return False
    return True


def _grants(role: Registered, grants: _Grants) -> Iterable[tuple[str, Any]]:
    """(where, policy document or managed policy name) for each policy the role is granted in the stack."""
    if role.type == rt.AWS_IAM_ROLE:
        for i, inline in enumerate(read_all(role.props, "inlinePolicies.*")):
            yield f"inlinePolicies[{i}]", read(inline, "policy")
        for arn in read_all(role.props, "managedPolicyArns.*"):
            if isinstance(arn, str) and ":aws:policy/" in arn and arn.split("/")[-1] in BROAD_MANAGED_POLICIES:
                yield "managedPolicyArns", f"managed:{arn.split('/')[-1]}"
            for policy in grants.managed(arn):
                yield f"Policy {policy.name!r}", read(policy.props, "policy")
        for r in grants.holders(role):
            if r.type == rt.AWS_IAM_ROLE_POLICY:
                yield f"RolePolicy {r.name!r}", read(r.props, "policy")
            elif r.type in (rt.AWS_IAM_ROLE_POLICY_ATTACHMENT, rt.AWS_IAM_POLICY_ATTACHMENT):
                arn = read(r.props, "policyArn")
                if isinstance(arn, str) and arn.split("/")[-1] in BROAD_MANAGED_POLICIES and ":aws:policy/" in arn:
                    yield f"{r.name!r}", f"managed:{arn.split('/')[-1]}"
                for policy in grants.attached(rt.AWS_IAM_POLICY, r, arn, "policyArn"):
                    yield f"Policy {policy.name!r}", read(policy.props, "policy")
    else:
        for r in grants.holders(role):
            if r.type != rt.ALI_RAM_ROLE_POLICY_ATTACHMENT:
                continue
            name = read(r.props, "policyName")
            if read(r.props, "policyType") == "System" and name in BROAD_MANAGED_POLICIES:
                yield f"{r.name!r}", f"managed:{name}"
            for policy in grants.attached(rt.ALI_RAM_POLICY, r, name, "policyName"):
                yield f"Policy {policy.name!r}", read(policy.props, "policyDocument") or read(policy.props, "document")


def _role_wildcard(args: StackValidationArgs, report: ReportViolation) -> None:
    # In URN order: the engine hands resources over in the order their registrations completed, which varies, and
    # the message must not.
    stack = sorted((c.registered(r) for r in args.resources), key=lambda r: r.urn)
    config = args.get_config()
    grants = _Grants(stack)
    for role in stack:
        if role.type not in (rt.AWS_IAM_ROLE, rt.ALI_RAM_ROLE) or c.listed(config, "acceptRoles", role.urn) or not _trusts_instances(role):
            continue
        problems = []
        for where, doc in _grants(role, grants):
            if isinstance(doc, str) and doc.startswith("managed:"):
                problems.append(f"{where} attaches {doc.removeprefix('managed:')}")
            else:
                problems += [f"{where} allows {grant}" for grant in broad_grants(doc)]
        if problems:
            report(f"{c.display(role.type, role.name)}, a role instances assume: {'; '.join(problems)}; whoever runs "
                   "code on the instance holds these rights; accepted: the actions it needs on the resources it "
                   "needs (its checkpoint prefix, its own instance)", role.urn)


INSTANCE_ROLE_TYPES = (rt.AWS_IAM_ROLE, rt.AWS_IAM_ROLE_POLICY, rt.AWS_IAM_POLICY, rt.AWS_IAM_ROLE_POLICY_ATTACHMENT,
                       rt.AWS_IAM_POLICY_ATTACHMENT, rt.ALI_RAM_ROLE, rt.ALI_RAM_POLICY, rt.ALI_RAM_ROLE_POLICY_ATTACHMENT)

instance_role_wildcard = c.judges(StackValidationPolicy(
    name="instance-role-wildcard",
    description="A role instances assume is granted no wildcard action, NotAction or service-wide action on "
    "every resource.",
    validate=_role_wildcard,
    enforcement_level=c.level("mandatory"),
    config_schema=c.schema(
        {
            "acceptRoles": {"type": "array", "items": {"type": "string"}, "default": [],
                            "description": "Role resources accepted with wide rights after review: " + c.ACCEPT_FORMS},
        }
    ),
), INSTANCE_ROLE_TYPES)

POLICIES = [bucket_policy_public, instance_role_wildcard]
