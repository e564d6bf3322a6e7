"""``make mutate`` rows for ``--output`` never a name Python imports (an extension module, a module in other
capitals, a startup file of a site directory), a hub listing's next page compared as the request sent, a restart that
clears the part's saved ranges first, a Transfer-Encoding other than chunked refused, and bucket keys the cloud
cannot hold refused at plan: each edit removes one check, and the named tests must fail."""

from __future__ import annotations

from tools.mutation_row import Mutation

SAME = "gpulease/core/same_file.py"
FETCH = "instance/staging_fetch.py"
HTTP = "instance/staging_http.py"
SOURCES = "gpulease/core/datasources.py"
IMPORTED = ("tests/cli/test_output_never_an_imported_name.py",)
NEXT_PAGE = ("tests/instance/test_listing_next_page_same_request.py",)
RESTART = ("tests/instance/test_restart_drops_saved_ranges.py",)
CODING = ("tests/instance/test_transfer_coding_refused.py",)
KEYS = ("tests/core/test_bucket_key_cloud_rules.py",)

MUTATIONS: list[Mutation] = [
    Mutation("lost10", SAME, 'PROGRAM_SUFFIXES = tuple(dict.fromkeys(s.lower() for s in (*importlib.machinery.all_suffixes(), ".pyi", ".pth")))',
             'PROGRAM_SUFFIXES = (".py", ".pyc", ".pyi", ".pth")', IMPORTED,
             "plan --output never writes an extension module name (x.abi3.so, x.cpython-311-...so) beside a module"),
    Mutation("lost10", SAME, "    return name.lower().endswith(PROGRAM_SUFFIXES)",
             "    return name.endswith(PROGRAM_SUFFIXES)", IMPORTED,
             "a module name in other capitals (plan.PY) is the module on a case-insensitive file system"),
    Mutation("lost10", SAME, "    if startup and target.parent in _startup_folders():", "    if False:", IMPORTED,
             "--output never writes a .pth file or sitecustomize/usercustomize into a site directory"),
    Mutation("lost10", SAME, 'site.getusersitepackages(), *sys.path]', "site.getusersitepackages()]", IMPORTED,
             "every sys.path folder is one a Python start imports sitecustomize/usercustomize from"),
    Mutation("lost10", "gpulease/cli/output_file.py",
             "    found = input_problem(path, reads, sources) or startup_problem(path)",
             "    found = input_problem(path, reads, sources)", IMPORTED,
             "the startup-file check is part of every --output check"),
    Mutation("lost10", "instance/staging_hubs.py", "        problem = guard.problem(url, sent_as(url))",
             "        problem = guard.problem(url)", NEXT_PAGE,
             "staging: a next page is the page already read when it is the same request as sent"),
    Mutation("lost10", HTTP,
             '    port_text = f":{port}" if port is not None and port != DEFAULT_PORTS.get(scheme) else ""',
             '    port_text = f":{port}" if port is not None else ""', NEXT_PAGE,
             "staging: an explicit default port is the same request"),
    Mutation("lost10", "instance/staging_parts.py",
             '            self.folder.write_json(task.state, {"mode": "stream", "size": task.size, "etag": None, "done": [],\n'
             '                                                "url": task.job.url})',
             "            pass", RESTART,
             "staging: a restart clears the state file's ranges before the part is truncated"),
    Mutation("lost10", FETCH, "if resp.status in (200, 206) and (coding := transfer_coded_as(resp)) is not None:",
             "if resp.status in (200, 206) and (coding := None) is not None:", CODING,
             "staging: an answer with a Transfer-Encoding other than chunked is refused, naming it"),
    Mutation("lost10", HTTP, '    return None if codings == ["chunked"] and resp.chunked else (value[:80] or "(empty)")',
             '    return None if "chunked" in codings else (value[:80] or "(empty)")', CODING,
             "staging: only exactly chunked is accepted (not gzip, chunked)"),
    Mutation("lost10", FETCH, '            length = None if resp.chunked else resp.getheader("Content-Length")',
             '            length = resp.getheader("Content-Length")', CODING,
             "staging: a Content-Length beside chunked is not the file's length"),
    Mutation("lost10", SOURCES, '        if scheme == "oss" and key.startswith("/"):', "        if False:", KEYS,
             "plan: an OSS object name never starts with /"),
    Mutation("lost10", SOURCES, "        if (size := len(key.encode())) > most:", "        if (size := len(key)) > 4096:",
             KEYS, "plan: a bucket key longer than the cloud stores (S3 1,024, OSS 1,023 bytes) is refused"),
    Mutation("lost10", SOURCES, '        most = KEY_MAX_BYTES[scheme] - (not key or key.endswith("/"))',
             "        most = KEY_MAX_BYTES[scheme]", KEYS, "plan: a prefix leaves a byte for a name under it"),
]
