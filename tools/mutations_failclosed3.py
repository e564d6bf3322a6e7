"""``make mutate`` rows for what must not pass unseen: a stack with no region priced in none, a managed node
group's launch template dependency, os._exit ending a render as partial, the aws-native fleets' forms, and the
launch templates inside a CloudFormation template judged for metadata and encryption."""

from __future__ import annotations

from tools.mutation_row import Mutation

AREA = "failclosed3"
CORPUS = ("tests/review/test_corpus.py",)
ISOLATION = ("tests/review/test_isolation.py",)
CFN = ("tests/policies/test_cloudformation.py",)
PROGRAMS = ("tests/policies/test_programs.py",)

MUTATIONS: list[Mutation] = [
    Mutation(AREA, "gpulease/review/mocks.py", '        named = self.region if region and self.region_given else ""',
             "        named = self.region if region else \"\"", CORPUS,
             "the mocks' ARNs name no region when the stack configures none"),
    Mutation(AREA, "gpulease/review/mocks_aws.py",
             '        "region": i.get("region") or (m.region if m.region_given else ""),',
             '        "region": i.get("region") or m.region,', CORPUS,
             "a bucket's region output names no region when the stack configures none"),
    Mutation(AREA, "gpulease/review/models/eks_nodes.py",
             '    }, depends={"launchTemplate": b.input_dependencies("launchTemplate")},', "    },", CORPUS,
             "a managed node group keeps its launch template dependency"),
    Mutation(AREA, "gpulease/review/program_exit.py", "        raise ProcessExit(code)", "        real(code)", ISOLATION,
             "os._exit in a program ends the render as sys.exit does (partial, what it constructed judged)"),
    Mutation(AREA, "gpulease/review/isolation.py", '        return "nothing it registered reached the review"',
             '        return "what it registered until then is reviewed"', ISOLATION,
             "a child that died before anything reached the review says nothing was reviewed"),
    Mutation(AREA, "gpulease/core/compute/aws_native_forms.py",
             "        hazards=a._fleet_hazards, decoys=form_of(rt.AWS_FLEET).decoys,  # type: ignore[union-attr]",
             "        decoys=form_of(rt.AWS_FLEET).decoys,  # type: ignore[union-attr]", PROGRAMS,
             "an instant aws-native EC2 Fleet cannot be bounded"),
    Mutation(AREA, "gpulease/core/compute/aws_native_forms.py",
             "        deadlines=_nested(form_of(rt.AWS_SPOT_FLEET).deadlines, _SPOT),  # type: ignore[union-attr]",
             "        deadlines=form_of(rt.AWS_SPOT_FLEET).deadlines,  # type: ignore[union-attr]", PROGRAMS,
             "an aws-native spot fleet's expiry is read inside spot_fleet_request_config_data"),
    Mutation(AREA, "gpulease/core/compute/aws_native_forms.py",
             "        metadata_gap=_spot_fleet_metadata_gap,\n", "", PROGRAMS,
             "an aws-native spot fleet's launch specifications cannot require metadata tokens"),
    Mutation(AREA, "gpulease/core/compute/aws_native_forms.py",
             '        if isinstance(spec, Mapping) and spec.get("resourceType") in ("fleet", "instance"):',
             '        if isinstance(spec, Mapping) and spec.get("resourceType") == "instance":', PROGRAMS,
             "an aws-native EC2 Fleet's fleet tag specifications are its tags"),
    Mutation(AREA, "policies/guardrails/instance.py", "    if args.resource_type == CLOUDFORMATION_STACK:",
             "    if False:", CFN, "a CloudFormation template's launch templates are judged for metadata tokens"),
    Mutation(AREA, "policies/guardrails/storage.py", "        if r.resource_type == CLOUDFORMATION_STACK:",
             "        if False:", CFN, "a CloudFormation template's launch templates are judged for encryption"),
]
