"""``make mutate`` rows for reads of a stack reference value unknown offline (``get_output_details``, ``outputs``,
``is_known``), an EKS cluster's OIDC provider offline, and the site of a failed lifted attribute read."""

from __future__ import annotations

from tools.mutation_row import Mutation

AREA = "fc11"
READS = ("tests/review/test_stack_reference_reads.py",)
OIDC = ("tests/review/test_eks_oidc_provider.py",)
PREVIEW = "gpulease/review/preview_reads.py"
MODEL = "gpulease/review/models/eks_cluster.py"

MUTATIONS: list[Mutation] = [
    Mutation(AREA, PREVIEW, '            watch(self, frame, "whether it knows")', "            pass", READS,
             "a program awaiting is_known() of an output unknown offline is partial"),
    Mutation(AREA, PREVIEW, "            unseen(future_line(site))\n            return pulumi.StackReferenceOutputDetails()",
             "            return pulumi.StackReferenceOutputDetails()", READS,
             "a program awaiting get_output_details() of a stack output unknown offline is partial"),
    Mutation(AREA, PREVIEW, "            if await _answered(self, name):", "            if False:", READS,
             "get_output_details() of a stack output the mocks answer gives its value"),
    Mutation(AREA, "gpulease/review/unknown_compute.py",
             "        return pulumi.Output(real.resources(), _none(), _false(), real.is_secret())",
             "        return real", READS, "a stack reference's output map read by the program is unknown offline"),
    Mutation(AREA, "gpulease/review/unknown_compute.py",
             "        if real is None or not is_program_path(sys._getframe(1).f_code.co_filename) or",
             "        if real is None or", READS, "the SDK's own reads of a stack reference's output map see the mocks' answer"),
    Mutation(AREA, MODEL, '            "oidcProvider": oidc}', '            "oidcProvider": None}', OIDC,
             "an EKS cluster made with an OIDC provider answers core.oidcProvider"),
    Mutation(AREA, MODEL, "        oidc_url = oidc_arn = rpc.UNKNOWN\n", "", OIDC,
             "an EKS cluster's oidcProviderUrl and oidcProviderArn are unknown offline"),
    Mutation(AREA, "gpulease/review/lifted_sites.py", "                    setattr(exc, LIFTED_SITE, site)",
             "                    pass", OIDC, "a failed lifted attribute read names the program's file:line"),
]
