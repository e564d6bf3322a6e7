"""``make mutate`` rows for staging on the instance and ``gpulease pull``: confinement (links, FIFOs, devices,
paths that leave their folder), the deadlines, the listing's checks, the retries' bound, the range, size and digest
checks, unverified files and the hub token's host."""

from __future__ import annotations

from tools.mutation_row import Mutation

HOSTILE = "tests/instance/test_staging_hostile.py"
STAGING = "tests/instance/test_staging.py"
PULL = ("tests/transfer/test_pull_confined.py",)
FILES = "instance/staging_files.py"
HTTP = "instance/staging_http.py"
FETCH = "instance/staging_fetch.py"
PARTS = "instance/staging_parts.py"
HUBS = "instance/staging_hubs.py"
STAGER = "instance/staging.py"


def _h(*names: str) -> tuple[str, ...]:
    """The hostile-staging tests; ``names`` say which of them kill the row (the table names files only)."""
    return (HOSTILE,)


def _s(*names: str) -> tuple[str, ...]:
    """The staging tests against moto and the boot rig; ``names`` say which of them kill the row."""
    return (STAGING,)


MUTATIONS = [
    Mutation("staging", FILES, "DIR_FLAGS = os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW | os.O_CLOEXEC",
             "DIR_FLAGS = os.O_RDONLY | os.O_DIRECTORY | os.O_CLOEXEC",
             _h("test_a_symlinked_subfolder_is_not_written_through", "test_a_to_folder_that_is_itself_a_symlink_is_refused"),
             "folders on the way are entered without following links"),
    Mutation("staging", FILES, "FILE_FLAGS = os.O_NOFOLLOW | os.O_NONBLOCK | os.O_CLOEXEC",
             "FILE_FLAGS = os.O_NONBLOCK | os.O_CLOEXEC",
             _h("test_a_stale_part_file_that_links_to_a_checkpoint_is_never_followed"),
             "a stale .part that is a symlink is never followed"),
    Mutation("staging", FILES, "        st = os.fstat(fd)\n        if not stat.S_ISREG(st.st_mode):",
             "        st = os.fstat(fd)\n        if False:",
             _h("test_something_other_than_a_file_where_a_file_goes_fails_the_source"),
             "a file is written or read only when it is a regular file (a FIFO .part is refused)"),
    Mutation("staging", FILES, 'any(p in ("", ".", "..") for p in parts)', 'any(p == ".." for p in parts[:0])',
             _h("test_a_listing_path_that_leaves_the_folder_or_is_not_normal_is_refused"),
             "a listing path with '..' (../raw2/x: a sibling with the same prefix) never leaves its folder"),
    Mutation("staging", FILES, "                else:\n                    raise ConfinementError(f\"{self.path(rel)} is",
             "                elif False:\n                    raise ConfinementError(f\"{self.path(rel)} is",
             _s("test_a_bucket_sources_folder_with_a_link_fifo_or_device_fails_before_the_cli_runs"),
             "a bucket source's folder holds regular files and folders only (hash only regular files)"),
    Mutation("staging", STAGER, "        list(folder.files())  # the CLI", "        pass  # the CLI",
             _s("test_a_bucket_sources_folder_with_a_link_fifo_or_device_fails_before_the_cli_runs"),
             "the storage CLI never runs over a folder holding a link"),
    Mutation("staging", PARTS, "        self.folder.regular_size(job.rel)  # a symlink", "        pass  # a symlink",
             _h("test_an_https_file_over_a_symlink_to_dev_zero_is_refused"),
             "what is at a file's place is checked before anything is downloaded"),
    Mutation("staging", FILES, "        if write and st.st_nlink > 1:", "        if False:",
             _h("test_a_stale_part_file_hard_linked_to_a_checkpoint_is_never_written_through"),
             "a file staging writes has one name only (a hard-linked .part is never written through)"),
    Mutation("staging", STAGER, "    if not BEARER_TOKEN.match(token):", "    if False:",
             _s("test_a_hub_token_with_characters_a_header_cannot_carry_is_refused_without_showing_it"),
             "the hub token holds only a bearer token's characters"),
    Mutation("staging", STAGER, "    if name == STATE_NAME or name.endswith(SKIPPED_NAMES):", "    if False:",
             _h("test_a_listed_file_named_as_stagings_own_records_is_refused"),
             "a listed file named as staging's own records is refused"),
    Mutation("staging", HTTP, 'if self.auth and f"{parts.scheme}://{parts.netloc}" == self.auth_host:', "if self.auth:",
             _s("test_a_json_hub_token_secret_is_sent_as_its_token_to_the_hub_only"),
             "the hub token goes only to the hub's own host, never to a redirect's"),
    Mutation("staging", STAGER, "    token = token_from_secret(token, secret)\n", "",
             _s("test_a_json_hub_token_secret_is_sent_as_its_token_to_the_hub_only"),
             'a JSON secret {"token": ...} is sent as its token, not verbatim'),
    Mutation("staging", HTTP, "TRANSIENT = frozenset({429, 500, 502, 503, 504})", "TRANSIENT = frozenset()",
             _h("test_transient_answers_are_retried_with_backoff_and_others_are_not"),
             "transient answers are retried"),
    Mutation("staging", FETCH, "if piece.attempt >= self.attempts:", "if piece.attempt >= self.attempts + 100:",
             _h("test_transient_answers_stop_at_the_attempts"), "retries stop at the attempts"),
    Mutation("staging", STAGER, 'Deadline(self.source_seconds, "the source\'s deadline", outer=self.stage_deadline)',
             'Deadline(self.source_seconds, "the source\'s deadline")',
             _h("test_the_stage_deadline_bounds_every_source_after_it"), "the stage's deadline bounds every source"),
    Mutation("staging", "instance/bounds.py", "        if key in self.seen:", "        if False:",
             _h("test_a_listing_whose_next_page_loops_fails_instead_of_reading_forever"),
             "a listing whose next page was already read fails"),
    Mutation("staging", "instance/bounds.py", "        if len(self.seen) >= self.max_pages:", "        if False:",
             _h("test_a_listing_longer_than_the_page_cap_fails"), "a listing has a page cap"),
    Mutation("staging", HUBS, "    ok = isinstance(value, kinds) and not (isinstance(value, bool) and bool not in kinds)",
             "    ok = True", _h("test_a_malformed_hub_listing_fails_the_source_naming_the_field"),
             "a listing entry's fields have their types (no 'abc' or true as a size)"),
    Mutation("staging", HUBS, "    if not 0 <= value <= MAX_FILE_BYTES:", "    if not value <= MAX_FILE_BYTES:",
             _h("test_a_malformed_hub_listing_fails_the_source_naming_the_field"), "a listed size is not negative"),
    Mutation("staging", FETCH, "                if got != start:", "                if False:",
             _h("test_a_range_answered_from_the_wrong_offset_fails", "test_a_range_from_the_wrong_offset_fails_a_parallel_file"),
             "a 206 must start at the byte asked for"),
    Mutation("staging", FETCH, "if total is not None and task.size is not None and total != task.size:", "if False:",
             _h("test_a_server_size_other_than_the_listings_fails"), "the server's size is the listing's"),
    Mutation("staging", STAGER, '                if folder.regular_size(f["path"]) != f["size"]:',
             '                if folder.regular_size(f["path"]) is None:',
             _h("test_a_staged_file_whose_size_changed_is_fetched_again"),
             "a skip record holds only while every file has its recorded size"),
    Mutation("staging", PARTS, "if job.sha256 is not None and sha256 != job.sha256:", "if False:",
             _h("test_a_parallel_file_with_a_wrong_digest_is_refused_and_dropped"), "a file's SHA-256 is checked"),
    Mutation("staging", PARTS, "                if found != job.sha1_blob:", "                if False:",
             _s("test_a_hub_file_whose_digest_differs_from_the_listing_fails"), "a file's git blob id is checked"),
    Mutation("staging", PARTS, "                self._drop(task)\n                raise DigestMismatchError(f\"{job.what}: SHA-256",
             "                raise DigestMismatchError(f\"{job.what}: SHA-256",
             _s("test_a_digest_mismatch_fails_the_source_and_keeps_nothing"), "a wrong file is never resumed from"),
    Mutation("staging", PARTS, "verified = bool(job.sha256 or job.sha1_blob or by_size)",
             "verified = True", _h("test_a_body_without_length_or_digest_is_unverified_never_staged"),
             "a file with neither length nor digest is unverified, never staged"),
    Mutation("staging", STAGER, 'if src.get("sha256") and files[0]["sha256"] != src["sha256"]:', "if False:",
             _s("test_a_single_bucket_object_is_checked_against_its_sha256"),
             "a single bucket object is checked against its sha256"),
    Mutation("staging", "gpulease/transfer/files.py",
             "os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW | os.O_CLOEXEC, dir_fd=fd)",
             "os.O_RDONLY | os.O_DIRECTORY | os.O_CLOEXEC, dir_fd=fd)", PULL,
             "pull never writes through a symlinked folder"),
    Mutation("staging", "gpulease/transfer/files.py", "    if not stat.S_ISREG(st.st_mode):\n        raise UserError",
             "    if False:\n        raise UserError", PULL,
             "pull refuses a link, FIFO, device or folder where a file goes"),
    Mutation("staging", "gpulease/transfer/files.py", "                _place_no_replace(downloaded, name, fd)",
             "                os.rename(downloaded, str(target))", ("tests/transfer/test_pull_confined.py",),
             "pull puts a file in place by directory descriptor (a symlink swapped in is not written through)"),
]
