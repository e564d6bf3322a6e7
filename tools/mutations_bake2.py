"""``make mutate`` rows for the kit's records and the schema's agreement with the loader (issue 24): the ready and
baked records and the instance's reports (ready, verify, heartbeat, manifest) stay out of the checkpoint lifecycle,
the instance may write only their place, readers read where it writes, and the schema refuses the deadlines, e-mail
lists and sweep overrides the loader refuses."""

from __future__ import annotations

from tools.mutation_row import Mutation

LIFECYCLE = ("tests/components/aws/test_bake_record_lifecycle.py", "tests/instance/test_ready_record_key.py")
ROLES = ("tests/components/aws/test_experiment.py", "tests/components/alicloud/test_experiment.py")
AGREE = ("tests/components/spec/test_schema_loader_agree.py",)
TOOLS = ("tests/components/aws/test_bake_record_lifecycle.py", "tests/instance/test_fetch_tools.py")

GRANTS = ("tests/components/test_record_grants_exact.py",)

MUTATIONS = [
    Mutation("bake2", "components/aws/identity.py", '"Resource": f"{bucket_arn}/{node_ready_folder(prefix, rank)}*",',
             '"Resource": f"{bucket_arn}/{node_ready_folder(prefix, None)}*",', GRANTS,
             "an AWS cluster node may write the ready record its settings name"),
    Mutation("bake2", "components/alicloud/identity.py", '"Resource": [f"{bucket_arn}/{node_ready_folder(prefix, rank)}*",',
             '"Resource": [f"{bucket_arn}/{node_ready_folder(prefix, None)}*",', GRANTS,
             "an Alibaba cluster node may write the ready record its settings name"),
    Mutation("bake2", "components/image_bake.py", '    return f"{RECORDS_ROOT}{prefix}{folder}"',
             '    return f"{prefix}{RECORDS_ROOT}{folder}"', LIFECYCLE,
             "the ready and baked records live outside the checkpoint prefix the lifecycle expires"),
    Mutation("bake2", "components/userdata/workflow.py",
             '        fields["ready_record_uri"] = record_uri(checkpoint_uri, READY_FOLDER)',
             '        fields["ready_record_uri"] = checkpoint_uri + "_gpulease/ready/"', LIFECYCLE,
             "the instance writes its ready record where the bake gate lists it"),
    Mutation("bake2", "components/spec/sections.py", '        if prefix.split("/", 1)[0] == "_gpulease":',
             "        if False:", LIFECYCLE, "a checkpoint prefix cannot put the checkpoints' lifecycle over the records"),
    Mutation("bake2", "components/aws/identity.py", '"Resource": f"{bucket_arn}/{node_ready_folder(prefix, rank)}*",',
             '"Resource": f"{bucket_arn}/_gpulease/*",', ROLES, "the instance writes only its own ready records (AWS)"),
    Mutation("bake2", "components/alicloud/identity.py", '"Resource": [f"{bucket_arn}/{node_ready_folder(prefix, rank)}*",',
             '"Resource": [f"{bucket_arn}/*",', ROLES, "the instance writes only its own ready records (OSS)"),
    Mutation("bake2", "components/image_bake.py",
             "    return prefix if rank in (None, 0) else f\"{prefix.rstrip('/')}/nodes/{rank}/\"",
             "    return prefix", ("tests/components/test_cluster.py", "tests/components/test_record_grants_exact.py"),
             "each cluster node's role may write its own reports"),
    Mutation("bake2", "components/alicloud/identity.py",
             '                                 f"{bucket_arn}/{node_control_folder(prefix, rank)}*"],',
             '                                 f"{bucket_arn}/_gpulease/*"],', ROLES,
             "the instance writes only its own reports (OSS)"),
    Mutation("bake2", "components/aws/identity.py", '"Resource": f"{bucket_arn}/{node_control_folder(prefix, rank)}*",',
             '"Resource": f"{bucket_arn}/_gpulease/*",', ROLES, "the instance writes only its own reports (AWS)"),
    Mutation("bake2", "components/userdata/workflow.py",
             '        fields["control_uri"] = record_uri(checkpoint_uri, CONTROL_FOLDER)',
             '        fields["control_uri"] = checkpoint_uri + "_gpulease/"', LIFECYCLE,
             "the instance reports where status and up read, outside the checkpoint lifecycle"),
    Mutation("bake2", "gpulease/live/status.py", '        key = f"{control_folder(prefix)}{name}.json"',
             '        key = f"{prefix}_gpulease/{name}.json"', ("tests/live/test_status.py",),
             "status reads the reports where the instance writes them"),
    Mutation("bake2", "gpulease/live/logs.py", '        body = self._get(f"{self.reports}{name}")',
             '        body = self._get(f"{self.prefix}{name}")', ("tests/live/test_logs.py",),
             "logs reads the ready and verify records where the instance writes them"),
    Mutation("bake2", "gpulease/ephemeral/channel.py", '        key = f"{loc.records}{READY_MARKER}"',
             '        key = f"{loc.control}{READY_MARKER}"', ("tests/cli/test_up.py",),
             "up's readiness wait reads the ready marker where the instance writes it"),
    Mutation("bake2", "components/userdata/tools.py",
             '    return f"{record_folder(prefix, TOOLS_FOLDER)}{tools_sha256()}.json"',
             '    return f"{prefix}_gpulease/{TOOLS_FOLDER}{tools_sha256()}.json"', TOOLS,
             "the tools bundle every boot fetches lives outside the checkpoint prefix the lifecycle expires"),
    Mutation("bake2", "components/build.py",
             "                tools = [upload, cloud.allow_tools_read(node, identity, tools_bucket, key)]",
             "                tools = [upload]", ("tests/components/aws/test_bake_record_lifecycle.py",),
             "the instance may read the tools bundle outside its checkpoint prefix"),
    Mutation("bake2", "components/spec/deadline_form.py", "        return datetime.fromisoformat(value.upper())",
             '        return datetime.fromisoformat("2030-01-01T01:00:00+00:00")', AGREE, "the loader parses the deadline it was given"),
    Mutation("bake2", "components/spec/experiment.py", '"pattern": DEADLINE_PATTERN, "format": "date-time"}',
             '"pattern": DEADLINE_PATTERN}', AGREE, "the schema refuses calendar times that do not exist"),
    Mutation("bake2", "components/spec/run.py", '"maxItems": MAX_ALERT_EMAILS, "uniqueItems": True,',
             '"maxItems": MAX_ALERT_EMAILS,', AGREE, "the schema refuses an alert address listed twice"),
    Mutation("bake2", "components/spec/schema.py", "    sweep.setdefault(\"allOf\", []).extend(_sweep_market_rules())",
             "    pass", AGREE, "the schema applies the market rules to a run's overrides"),
]
