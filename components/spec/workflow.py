"""The workflow before training: the phase a stack is in, the preparation phase's instance, the data staged on the
instance before readiness, and the personal image baked from a ready instance.

- ``phase``: ``prep`` (a CPU instance, the cheapest catalog type with ``prep.vcpus`` and ``prep.memoryGb``, on the
  same data disk and bucket, its own deadline from ``prep.maxRuntimeHours``, idle on CPU and SSH activity),
  ``train`` (the GPU instance), ``parked`` (no instance; the disk and the bucket stay).
- ``data.sources``: ``{uri, to, sha256?, revision?, region?}`` staged by the bootstrap before readiness
  (``instance/staging.py``); ``data.hubTokenSecret`` names the secret holding a private hub token, read on the
  instance with the role (never in user-data, logs or tags).
- ``image.bake`` / ``image.fromStack``: see ``components/image_bake.py``.
"""

from __future__ import annotations

import posixpath
import re
from typing import Literal

from pydantic import ConfigDict, Field, field_validator, model_validator

from components.spec.text import HIDDEN_SCHEMA, PATH_SCHEMA, hidden_character, plain_path
from components.spec_rules import Problem
from gpulease.core import datasources as ds
from gpulease.core.model import SpecModel
from gpulease.core.schema_pattern import ANY_SPACE, literal, schema_pattern

Phase = Literal["prep", "train", "parked"]
MOUNT_POINT = "/data"
"""Where the data disk is mounted on the instance (``components.userdata.settings.MOUNT_POINT``, the same value)."""
RESERVED_DIRS = ("checkpoints", "logs", "final", ".gpulease", "lost+found")
"""Folders of the data disk the kit (or the file system) writes itself: a source may not land in them
(``.gpulease`` holds the job's run script and tmux configuration, ``instance/run_job.py``; ``lost+found`` is
ext4's)."""
TO_MAX_BYTES = 512
"""A ``to:`` folder travels in user-data and in every log line of its source, and leaves the rest of PATH_MAX (4096
bytes) to the paths below it: at most 512 bytes in UTF-8, as the instance counts it (``instance/staging_files.py``
TO_MAX_BYTES); a name part is at most 255 bytes (NAME_MAX on ext4 and xfs)."""
NAME_MAX = ds.NAME_MAX
MAX_SOURCES = 32
"""Every source travels in user-data; 32 keeps the largest spec a quarter under the smaller (AWS) limit."""
SHA256 = re.compile(r"^[0-9a-fA-F]{64}\Z")
"""Either case: the loader keeps the lowercase form."""
REVISION = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._/-]{0,127}\Z")
REGION = re.compile(r"^[a-z]{2}(-[a-z0-9]+){1,3}\Z")
# AWS secret names: 1-512 of letters, digits and /_+=.@- (Secrets Manager CreateSecret, Name); an ARN is accepted
# as it is. Alibaba Cloud KMS secret names: 1-192 of letters, digits, _ / + = . @ - (KMS CreateSecret, SecretName).
SECRET_REF = re.compile(r"^(arn:aws[a-z-]*:secretsmanager:[a-z0-9-]+:[0-9]{12}:secret:[A-Za-z0-9/_+=.@-]{1,512}|"
                        r"[A-Za-z0-9/_+=.@-]{1,192})\Z")


def _scheme_pattern(schemes: tuple[str, ...]) -> str:
    return "^(" + "|".join(map(literal, schemes)) + ")://"


def _only_for(field: str, schemes: tuple[str, ...]) -> dict:
    """JSON Schema: ``field`` is given (not null) only on a source of one of ``schemes``, as ``_fits`` says."""
    return {"if": {"required": ["uri"], "properties": {"uri": {"not": {"pattern": _scheme_pattern(schemes)}}}},
            "then": {"properties": {field: {"type": "null"}}}}


_NAME = r"(?!\.\.?(/|(?![\s\S])))[^/\x00-\x1f\x7f]+"
_FOLDER_PATTERN = rf"^{literal(MOUNT_POINT)}(/{_NAME})+/?(?![\s\S])"
"""JSON Schema of ``_to``'s shape: a normalised folder under the mount point (no empty, . or .. name)."""
_RESERVED_PATTERN = rf"^{literal(MOUNT_POINT)}/({'|'.join(map(literal, RESERVED_DIRS))})(/|(?![\s\S]))"


class DataSourceSpec(SpecModel):
    model_config = ConfigDict(json_schema_extra={"allOf": [  # merged with SpecModel's
        _only_for("revision", ds.HUB_SCHEMES), _only_for("region", ds.BUCKET_SCHEMES)]})

    uri: str = Field(..., description="s3://bucket/key-or-prefix/, oss://..., hf://org/repo, hf://datasets/org/repo, "
                     "modelscope://org/repo or https://host/file.",
                     # The scheme and the characters; the rest of a URI's shape is parse_source's alone.
                     json_schema_extra={"pattern": _scheme_pattern(ds.SCHEMES) + rf"[^{ANY_SPACE}\\\x00-\x1f\x7f]*(?![\s\S])"})
    to: str = Field(..., description="A folder on the data disk, e.g. /data/models/llama-2-7b.",
                    json_schema_extra={**PATH_SCHEMA, "pattern": _FOLDER_PATTERN, "maxLength": TO_MAX_BYTES,
                                       "not": {"anyOf": [
                                           {"type": "string", "pattern": _RESERVED_PATTERN}, HIDDEN_SCHEMA["not"]]}})
    sha256: str | None = Field(None, description="The file's SHA-256 (one-file sources): staging fails on a mismatch.",
                               json_schema_extra={"pattern": schema_pattern(SHA256)})
    revision: str | None = Field(None, description="Hub sources: a branch, tag or commit (hf: main, modelscope: master).",
                                 json_schema_extra={"pattern": schema_pattern(REVISION), "not": {"type": "string", "pattern": r"\.\."}})
    region: str | None = Field(None, description="Bucket sources: the bucket's region when it is not the stack's.",
                               json_schema_extra={"pattern": schema_pattern(REGION)})

    @field_validator("uri")
    @classmethod
    def _uri(cls, uri: str) -> str:
        problem = ds.credential_problem(uri)
        if problem:
            raise ValueError(f"the URI looks like it holds a credential ({problem}); accepted: a URI without one: the "
                             "instance reads buckets with its role and a private hub token from data.hubTokenSecret")
        name = ds.file_name(ds.parse_source(uri))
        if name is not None and ds.staging_reserved(name):
            raise ValueError(f"the file name {name!r} is one staging gives its own records in the folder "
                             f"({ds.STAGING_STATE_NAME}, *{', *'.join(ds.STAGING_RESERVED_SUFFIXES)}); accepted: "
                             "another name (rename the object or file at its source)")
        return uri

    @field_validator("to")
    @classmethod
    def _to(cls, to: str) -> str:
        plain_path(to, "folder path")
        hidden = hidden_character(to)
        if hidden:
            raise ValueError(f"{to!r} {hidden}; accepted: a folder path of visible characters, e.g. {MOUNT_POINT}/raw")
        size, longest = len(to.encode()), max(len(part.encode()) for part in to.split("/"))
        if size > TO_MAX_BYTES or longest > NAME_MAX:
            raise ValueError(f"is {size} bytes in UTF-8 ({len(to)} characters), its longest name {longest} bytes; "
                             f"accepted: a folder path of at most {TO_MAX_BYTES} bytes, each name at most {NAME_MAX} "
                             "bytes")
        norm = posixpath.normpath(to)
        if not to.startswith(MOUNT_POINT + "/") or norm != to.rstrip("/") or norm == MOUNT_POINT:
            raise ValueError(f"{to!r} is not a folder under {MOUNT_POINT}; accepted: e.g. {MOUNT_POINT}/raw/alpaca or "
                             f"{MOUNT_POINT}/models/llama-2-7b (absolute, normalised, no ..)")
        top = norm.split("/")[2]
        if top in RESERVED_DIRS:
            raise ValueError(f"{to!r} is inside {MOUNT_POINT}/{top}, which the kit writes itself; accepted: another "
                             f"folder, e.g. {MOUNT_POINT}/raw/ or {MOUNT_POINT}/models/")
        return norm

    @field_validator("sha256")
    @classmethod
    def _sha256(cls, value: str | None) -> str | None:
        if value is not None and not SHA256.match(value):
            raise ValueError(f"{value!r} is not a SHA-256; accepted: 64 hexadecimal digits")
        return value.lower() if value else value

    @field_validator("revision")
    @classmethod
    def _revision(cls, value: str | None) -> str | None:
        if value is not None and (not REVISION.match(value) or ".." in value):
            raise ValueError(f"{value!r} is not a revision; accepted: a branch, tag or commit, e.g. main or v1.0")
        return value

    @field_validator("region")
    @classmethod
    def _region(cls, value: str | None) -> str | None:
        if value is not None and not REGION.match(value):
            raise ValueError(f"{value!r} is not a region; accepted: e.g. us-west-2 or cn-shanghai")
        return value

    @model_validator(mode="after")
    def _fits(self) -> DataSourceSpec:
        source = ds.parse_source(self.uri)
        if self.revision is not None and not source.is_hub:
            raise ValueError("revision applies to hf:// and modelscope:// sources only; accepted: omit it here")
        if self.region is not None and not source.is_bucket:
            raise ValueError("region applies to s3:// and oss:// sources only; accepted: omit it here")
        name = ds.file_name(source)  # its length within NAME_MAX less staging's suffix: parse_source's path rule
        if self.sha256 is not None and name is None:
            raise ValueError("sha256 applies to one-file sources (https://host/file, or a bucket key not ending in /); "
                             "hub files are verified against the hub's own digests; accepted: omit it here")
        return self

    @property
    def source(self) -> ds.SourceUri:
        return ds.parse_source(self.uri)

    @property
    def effective_revision(self) -> str | None:
        return self.revision or ds.DEFAULT_REVISIONS.get(self.source.scheme)


class DataSpec(SpecModel):
    sources: list[DataSourceSpec] = Field(default_factory=list, max_length=MAX_SOURCES,
                                          description="Staged on the instance before readiness, in order.")
    hub_token_secret: str | None = Field(
        None, description="AWS Secrets Manager secret (name or ARN) / Alibaba Cloud KMS secret name holding a private "
        "hub token; read on the instance with its role, never in user-data, logs or tags.",
        json_schema_extra={"pattern": schema_pattern(SECRET_REF)})

    @field_validator("hub_token_secret")
    @classmethod
    def _secret(cls, value: str | None) -> str | None:
        if value is not None and not SECRET_REF.match(value):
            raise ValueError(f"{value!r} is not a secret name; accepted: a Secrets Manager name or ARN (AWS), a KMS "
                             "secret name (Alibaba Cloud): letters, digits and / _ + = . @ -")
        return value


class PrepSpec(SpecModel):
    vcpus: int = Field(4, ge=1, le=192, description="At least this many vCPUs for the preparation instance.")
    memory_gb: float = Field(16, gt=0, le=1536, description="At least this much memory (GB) for the preparation instance.")
    max_runtime_hours: float = Field(12, gt=0, le=168, description="The preparation phase's own deadline after it starts.")
    idle_minutes: int = Field(60, ge=5, le=1440, description="Shut down after the CPU has been idle (and nobody logged in) this long.")
    idle_cpu_percent: int = Field(10, ge=0, le=100, description="Below this CPU utilization the instance counts as idle.")


def workflow_problems(sources: list[DataSourceSpec], scheme: str) -> list[Problem]:
    """Cross-field problems of ``data.sources``: a bucket of the other cloud, folders that overlap."""
    problems: list[Problem] = []
    for i, src in enumerate(sources):
        source = src.source
        if source.is_bucket and source.scheme != scheme:
            problems.append((f"data.sources[{i}].uri", f"{source.scheme}:// buckets are read on the other cloud; "
                             f"accepted on this stack's cloud: {scheme}://, hf://, modelscope://, https://"))
        for j in range(i):
            a, b = sources[j].to + "/", src.to + "/"
            if a.startswith(b) or b.startswith(a):
                problems.append((f"data.sources[{i}].to", f"{src.to} overlaps data.sources[{j}].to ({sources[j].to}); "
                                 "accepted: a folder of its own per source"))
    return problems
