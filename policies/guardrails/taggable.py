"""Whether a resource type accepts tags, read from the installed provider SDKs (no hand-kept list to drift)."""

from __future__ import annotations

import importlib
import importlib.util
import inspect
import json
from functools import lru_cache
from pathlib import Path

from gpulease.core import resources as rt

# Pulumi package name -> Python module of its SDK.
SDK_MODULES = {"aws": "pulumi_aws", "alicloud": "pulumi_alicloud", "time": "pulumiverse_time"}


@lru_cache(maxsize=512)
def resource_class(type_token: str) -> type | None:
    """The SDK class of a type token such as ``aws:ec2/instance:Instance``, or None when unknown."""
    try:
        package, module_path, class_name = type_token.split(":")
    except ValueError:
        return None
    root = SDK_MODULES.get(package)
    if root is None:
        return None
    module_name = module_path.split("/")[0]
    dotted = root if module_name == "index" else f"{root}.{module_name}"
    try:
        module = importlib.import_module(dotted)
    except ImportError:
        # A module named after a Python keyword carries a trailing underscore (``pulumi_aws.lambda_``).
        try:
            module = importlib.import_module(f"{dotted}_")
        except ImportError:
            return None
    return getattr(module, class_name, None)


# The same answer for the published pack, whose virtualenv has no provider SDKs: generated from the pinned SDKs'
# sources by ``make vendor`` (tools/vendor_pack.py), checked against them by tests/policies/test_publishable.py.
GENERATED_TABLE = Path(__file__).resolve().parent.parent / "_vendor" / "taggable_types.json"


@lru_cache(maxsize=1)
def generated_taggable_types() -> frozenset[str]:
    return frozenset(json.loads(GENERATED_TABLE.read_text(encoding="utf-8")))


@lru_cache(maxsize=512)
def is_taggable(type_token: str) -> bool:
    """True when the resource type takes a ``tags`` input (read from the SDK when installed, else from the
    generated table)."""
    root = SDK_MODULES.get(type_token.partition(":")[0])
    if root is not None and importlib.util.find_spec(root) is None:
        return type_token in generated_taggable_types()
    cls = resource_class(type_token)
    if cls is None or not hasattr(cls, "_internal_init"):
        return False
    return "tags" in inspect.signature(cls._internal_init).parameters


def is_accountable(type_token: str) -> bool:
    """True when the accounting tags are demanded on the type: it takes tags and is not an object in a bucket
    (billed as the bucket's storage, and its tags are object tags, not cost-allocation tags:
    ``gpulease.core.resources.BUCKET_OBJECT_TYPES``)."""
    return is_taggable(type_token) and type_token not in rt.BUCKET_OBJECT_TYPES
