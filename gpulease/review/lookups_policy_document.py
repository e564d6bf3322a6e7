"""``aws.iam.get_policy_document`` rendered as the provider renders it, so rules that read policies (a bucket
policy open to ``Principal: "*"``, a role allowed ``Action: "*"``) judge the document a real run would produce.

The provider's rendering (hashicorp/terraform-provider-aws, ``internal/service/iam/policy_model.go`` and the
``aws_iam_policy_document`` data source): ``Version`` (default ``2012-10-17``), ``Id``, ``Statement`` in the
given order; per statement ``Sid``, ``Effect`` (default ``Allow``), ``Action``, ``NotAction``, ``Resource``,
``NotResource``, ``Principal``, ``NotPrincipal``, ``Condition``, empty ones left out; a list of one value becomes
that value, a longer list is sorted in reverse; a principal of type ``*`` with the one identifier ``*`` becomes
``"*"``; condition values keep their order, one value alone becomes that value. Source documents come first,
the statements then replace those with the same ``Sid``, override documents last. ``json`` is indented by two
spaces, ``minifiedJson`` has no whitespace.
"""

from __future__ import annotations

import json
from typing import Any

from gpulease.review.mock_ids import _hex
from gpulease.review.mock_registry import MockState, register_answers


def _string_list(values: list[Any] | None) -> Any:
    values = [str(v) for v in values or []]
    if not values:
        return None
    return values[0] if len(values) == 1 else sorted(values, reverse=True)


def _principals(blocks: list[dict] | None) -> Any:
    blocks = blocks or []
    if not blocks:
        return None
    if len(blocks) == 1 and blocks[0].get("type") == "*" and list(blocks[0].get("identifiers") or []) == ["*"]:
        return "*"
    out: dict[str, Any] = {}
    for block in blocks:
        kind, ids = str(block.get("type")), _string_list(block.get("identifiers"))
        if ids is None:
            continue
        if kind not in out:
            out[kind] = ids
        else:
            merged = out[kind] if isinstance(out[kind], list) else [out[kind]]
            out[kind] = merged + (ids if isinstance(ids, list) else [ids])
    return dict(sorted(out.items()))


def _conditions(blocks: list[dict] | None) -> Any:
    out: dict[str, dict[str, list[str]]] = {}
    for block in blocks or []:
        values = [str(v) for v in block.get("values") or []]
        out.setdefault(str(block.get("test")), {}).setdefault(str(block.get("variable")), []).extend(values)
    if not out:
        return None
    return {test: {var: (vals[0] if len(vals) == 1 else vals) for var, vals in sorted(variables.items())}
            for test, variables in sorted(out.items())}


def statement(block: dict) -> dict[str, Any]:
    """One statement block of the data source as the JSON statement the provider writes."""
    fields = {
        "Sid": block.get("sid") or None,
        "Effect": block.get("effect") or "Allow",
        "Action": _string_list(block.get("actions")),
        "NotAction": _string_list(block.get("notActions")),
        "Resource": _string_list(block.get("resources")),
        "NotResource": _string_list(block.get("notResources")),
        "Principal": _principals(block.get("principals")),
        "NotPrincipal": _principals(block.get("notPrincipals")),
        "Condition": _conditions(block.get("conditions")),
    }
    return {k: v for k, v in fields.items() if v is not None}


def _merge(into: dict[str, Any], doc: dict[str, Any]) -> None:
    """The provider's merge: a newer Id and Version win; a statement with a Sid replaces the one of that Sid."""
    if doc.get("Id"):
        into["Id"] = doc["Id"]
    if str(doc.get("Version") or "") > str(into.get("Version") or ""):
        into["Version"] = doc["Version"]
    statements = into.setdefault("Statement", [])
    for new in doc.get("Statement") or []:
        sid = new.get("Sid")
        index = next((i for i, old in enumerate(statements) if sid and old.get("Sid") == sid), None)
        if index is None:
            statements.append(new)
        else:
            statements[index] = new


def _parse(text: Any) -> dict[str, Any]:
    try:
        doc = json.loads(text) if isinstance(text, str) else {}
    except ValueError:
        return {}
    if isinstance(doc.get("Statement"), dict):
        doc["Statement"] = [doc["Statement"]]
    return doc if isinstance(doc, dict) else {}


def render_document(a: dict) -> dict[str, Any]:
    """The policy document of a ``getPolicyDocument`` request, as a mapping in the provider's key order."""
    doc: dict[str, Any] = {"Version": a.get("version") or "2012-10-17"}
    for source in a.get("sourcePolicyDocuments") or []:
        _merge(doc, _parse(source))
    own: dict[str, Any] = {"Statement": [statement(b) for b in a.get("statements") or []]}
    if a.get("policyId"):
        own["Id"] = a["policyId"]
    _merge(doc, own)
    for override in a.get("overridePolicyDocuments") or []:
        _merge(doc, _parse(override))
    ordered = {"Version": doc["Version"]}
    if doc.get("Id"):
        ordered["Id"] = doc["Id"]
    ordered["Statement"] = doc.get("Statement") or []
    return ordered


def policy_document(m: MockState, a: dict) -> dict:
    doc = render_document(a)
    text = json.dumps(doc, indent=2)
    return {"id": str(int(_hex("policy-doc", text, length=8), 16)), "json": text,
            "minifiedJson": json.dumps(doc, separators=(",", ":")), "version": doc["Version"],
            "policyId": a.get("policyId"), "statements": a.get("statements"),
            "sourcePolicyDocuments": a.get("sourcePolicyDocuments"),
            "overridePolicyDocuments": a.get("overridePolicyDocuments"),
            "overrideJson": a.get("overrideJson"), "sourceJson": a.get("sourceJson")}


CALLS: dict[str, Any] = {"aws:iam/getPolicyDocument:getPolicyDocument": policy_document}

register_answers(CALLS)
