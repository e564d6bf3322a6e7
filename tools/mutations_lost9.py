"""``make mutate`` rows for a 200 to any ranged piece restarting the file, answers in a content coding refused, a
hub listing's next page held to the redirect rule, ``plan --output`` never over the shipped catalog or the kit's
modules, and a one-object bucket source granted its key alone: each edit removes one check, and the named tests
must fail."""

from __future__ import annotations

from tools.mutation_row import Mutation

FETCH = "instance/staging_fetch.py"
RESTART = ("tests/instance/test_piece_restart_on_200.py",)
ENCODING = ("tests/instance/test_content_encoding_refused.py",)
NEXT_PAGE = ("tests/instance/test_listing_next_page_scheme.py",)
OUTPUT = ("tests/cli/test_output_never_over_kit_inputs.py",)
GRANT = ("tests/components/test_source_object_grant.py",)

MUTATIONS: list[Mutation] = [
    Mutation("lost9", FETCH, "                if not whole:  # a 200 to any ranged piece",
             "                if start:  # a 200 to any ranged piece", RESTART,
             "staging: a 200 to a ranged first piece (bytes=0-) restarts the file, never joins two versions"),
    Mutation("lost9", FETCH, "if resp.status in (200, 206) and (coding := encoded_as(resp)) is not None:",
             "if resp.status in (200, 206) and (coding := None) is not None:", ENCODING,
             "staging: an answer with a Content-Encoding other than identity is refused, naming it"),
    Mutation("lost9", "instance/staging_http.py", '    return value[:80] if any(c != "identity" for c in codings) else None',
             "    return None", ENCODING, "staging: gzip (or any coding but identity) is read as a content coding"),
    Mutation("lost9", "instance/staging_hubs.py",
             '        url = redirect_target(url, link, "links its next page to") if link else None',
             "        url = urllib.parse.urljoin(url, link) if link else None", NEXT_PAGE,
             "staging: a hub listing's next page is only http(s), never from https down to http"),
    Mutation("lost9", "gpulease/cli/plan.py", "    reads += [*BASE_FILES, *override_paths(),",
             "    reads += [*override_paths(),", OUTPUT,
             "plan --output never writes over the shipped price catalog (instances.yaml, prices.yaml)"),
    Mutation("lost9", "gpulease/cli/plan.py", "    programs: list[Path] = kit_folders()",
             "    programs: list[Path] = []", OUTPUT,
             "plan --output never writes over a module of the kit (gpulease, components, policies)"),
    Mutation("lost9", "components/aws/workflow.py", "        if src.source.is_object:  # copied alone",
             "        if False:  # copied alone", GRANT,
             "AWS: a one-object bucket source grants s3:GetObject on its key alone, not key*"),
    Mutation("lost9", "components/alicloud/workflow.py", "        if src.source.is_object:  # copied alone",
             "        if False:  # copied alone", GRANT,
             "Alibaba Cloud: a one-object bucket source grants oss:GetObject on its key alone, not key*"),
]
