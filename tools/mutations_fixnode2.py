"""``make mutate`` rows for the log copy's whole-line redaction, the redaction of values after "is" and of a
presigned URL's credentials, and the cluster's wait for a peer's watchdog (its answer, its whole bound)."""

from __future__ import annotations

from tools.mutation_row import Mutation

UPLOAD = "instance/log_upload.py"
MANIFEST = "instance/manifest.py"
CLUSTER = "instance/cluster.py"
UPLOAD_TESTS = ("tests/instance/test_log_upload.py",)
PEER_TESTS = ("tests/instance/test_cluster_notice.py",)

MUTATIONS = [
    Mutation("instance", MANIFEST, 'out.append(redact(block[:-1]) + "\\n" if block.endswith("\\n") else redact(block))',
             'out.append("".join(redact(line) for line in block.splitlines(True)))', UPLOAD_TESTS,
             "a log line ends at a line feed only: a CR or a Unicode separator never hides a value from the redaction"),
    Mutation("instance", MANIFEST, r"|[^\S\n]+(?:(?:is|was|are)\b[^\S\n]*[:=]?[^\S\n]*)?)", r"|[^\S\n]+)", UPLOAD_TESTS,
             "a secret after 'is' / 'is:' is redacted"),
    Mutation("instance", MANIFEST, '    text = _QUERY_SECRET.sub(rf"\\1{REDACTED}", text)\n', "", UPLOAD_TESTS,
             "a presigned URL's signature and credential query parameters are redacted"),
    Mutation("instance", CLUSTER,
             'return found is not None and found.get("cluster") == cluster_id and found.get("rank") == rank',
             "return reachable(host, port, timeout)", PEER_TESTS,
             "a peer counts only when its watchdog answers as that node of this cluster"),
    Mutation("instance", CLUSTER, "        if left <= 0:\n            return False",
             "        if left <= interval:\n            return False", PEER_TESTS,
             "a port wait takes its whole bound before it gives up"),
    Mutation("instance", CLUSTER, '        if message.get("kind") == HELLO:\n            return False',
             '        if False:\n            return False', PEER_TESTS,
             "a peer's hello is never taken for a spot notice"),
    Mutation("instance", CLUSTER, '        if isinstance(message, dict) and message.get("kind") == HELLO:',
             "        if False:", PEER_TESTS, "the watchdog answers a peer's hello with its cluster and rank"),
]
