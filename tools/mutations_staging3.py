"""``make mutate`` rows for staging's receive path: the body's length counted for each receive into the kept
buffer, as ``HTTPResponse.read1`` counts it (else the connection is never kept, or a read runs past the body)."""

from __future__ import annotations

from tools.mutation_row import Mutation

BUFFERS = ("tests/instance/test_staging_buffers.py",)

MUTATIONS = [
    Mutation("staging-buffers", "instance/staging_fetch.py", "        resp.length = length - n\n", "        resp.length = length\n",
             BUFFERS, "a receive into the kept buffer counts down the body's length"),
    Mutation("staging-buffers", "instance/staging_fetch.py", "    if length is not None and len(view) > length:\n",
             "    if False:\n", BUFFERS, "a receive never takes more than what is left of the body"),
]
