"""``make mutate`` rows for staging's deadline on header lines and its redirects, resuming only with a validator,
part files open only while written, ephemeral listings that end, and ``plan --output`` beside the stack files:
each edit removes one check, and the named tests must fail."""

from __future__ import annotations

from tools.mutation_row import Mutation

HTTP = "instance/staging_http.py"
FETCH = "instance/staging_fetch.py"
PARTS = "instance/staging_parts.py"
TRICKLE = ("tests/instance/test_staging_trickled_headers_deadline.py",)
REDIRECT = ("tests/instance/test_redirect_scheme_refused.py",)
RESUME = ("tests/instance/test_resume_needs_validator.py",)
LISTING = ("tests/ephemeral/test_artifact_listing_token_cycle.py",)
PIECES = ("tests/instance/test_piece_validators.py",)
REFUSALS = ("tests/components/spec/test_plan_time_refusals.py",)

MUTATIONS: list[Mutation] = [
    Mutation("lost8", FETCH, "(etag is None or (task.etag is not None and etag != task.etag))",
             "(task.etag is not None and etag != task.etag)", PIECES,
             "staging: range answers of no validator are downloaded again as one stream"),
    Mutation("lost8", FETCH, "if total is None and resp.status == 200 and length", "if total is None and length",
             PIECES, "staging: Content-Range bytes a-b/* is of unknown length, not a size mismatch"),
    Mutation("lost8", FETCH, "if total != start or if_range_validator(resp) != task.etag:", "if False:", PIECES,
             "staging: a 416 of another length or validator restarts the file, never finishes the part"),
    Mutation("lost8", "gpulease/core/same_file.py", "    for place in (target, _resolved(target)):",
             "    for place in (target,):", ("tests/cli/test_output_symlink_stack_file.py",),
             "--output through a symlink to a Pulumi.<name>.yaml beside the stack files is refused"),
    Mutation("lost8", HTTP, "            shut = ShutAtDeadline(conn, self.deadline.left())",
             "            shut = ShutAtDeadline(conn, 1e9)", TRICKLE,
             "staging: a hub trickling its header lines is cut off at the source's deadline"),
    Mutation("lost8", "instance/cloud_access.py", "    shut = bounds.ShutAtDeadline(conn, total)",
             "    shut = bounds.ShutAtDeadline(conn, 1e9)", ("tests/instance/test_cloud_access.py",),
             "a metadata answer trickled a byte at a time ends at its total deadline"),
    Mutation("lost8", HTTP, '    if parts.scheme not in ("http", "https") or not parts.hostname:', "    if False:",
             REDIRECT, "staging: a redirect to a scheme other than http(s) is refused by name"),
    Mutation("lost8", HTTP, '    if source.scheme == "https" and parts.scheme == "http":', "    if False:", REDIRECT,
             "staging: a redirect from https down to http is refused"),
    Mutation("lost8", HTTP, "    except ValueError as exc:\n        raise StagingError(f\"{source.netloc}",
             "    except ZeroDivisionError as exc:\n        raise StagingError(f\"{source.netloc}", REDIRECT,
             "staging: a redirect to a Location that is no URL is refused in one line"),
    Mutation("lost8", PARTS, " or (have and etag is None):", ":", RESUME,
             "staging: a part file no validator vouches for is downloaded again from 0"),
    Mutation("lost8", FETCH, "(etag is None or (task.etag is not None and etag != task.etag))",
             "(etag is None)", RESUME,
             "staging: a 206 whose validator is not the part's (If-Range ignored) is not spliced onto it"),
    Mutation("lost8", HTTP, "        return etag if len(etag) > 1 and etag[0] == etag[-1] == '\"' else None",
             "        return etag", RESUME, "staging: a weak ETag never goes in If-Range"),
    Mutation("lost8", FETCH, "                self._close(task)  # opened again while a piece is written: at most one per worker",
             "                pass", ("tests/instance/test_staging_fd_bounded_by_workers.py",),
             "staging: a part file is open only while a piece is written (descriptors bounded by the workers)"),
    Mutation("lost8", "gpulease/ephemeral/channel.py", "(token and stop()) or guard.problem(token)",
             "(token and stop()) or None", LISTING,
             "ephemeral: an artifact or log listing whose continuation tokens cycle ends"),
    Mutation("lost8", "gpulease/ephemeral/channel.py", "(token and stop()) or guard.problem(token)",
             "guard.problem(token)", LISTING, "ephemeral: an artifact listing ends at the collect deadline"),
    Mutation("lost8", "gpulease/cli/output_file.py", "    if problem := stack_file_problem(path, reads):",
             "    if problem := None:", ("tests/cli/test_plan_output_refuses_stack_file.py",),
             "plan --output never writes a Pulumi.<name>.yaml beside the project's stack files"),
    Mutation("lost8", "gpulease/core/datasources.py", '        if "*" in key:', "        if False:", REFUSALS,
             "a bucket source's key holding a * (a wildcard in the role's read grant) is refused at plan by name"),
]
