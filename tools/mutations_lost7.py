"""``make mutate`` rows for artifacts never lost (one failed object, a file that appears meanwhile, bounds, the kept
bucket) and remote values shown as themselves: each edit removes one check, and the named tests must fail."""

from __future__ import annotations

from tools.mutation_row import Mutation

LOSS = ("tests/ephemeral/test_artifacts_loss.py",)
KEPT = ("tests/ephemeral/test_artifacts_kept.py",)
BOUNDED = ("tests/ephemeral/test_artifacts_bounded.py",)
SHOWN = ("tests/cli/test_remote_values_escaped.py", "tests/cli/test_hidden_output_paths.py")

MUTATIONS: list[Mutation] = [
    Mutation("lost7", "gpulease/transfer/files.py",
             "                _place_no_replace(downloaded, name, fd)",
             "                os.rename(downloaded, name, dst_dir_fd=fd)", LOSS,
             "a file that appears at an artifact's place during its download is never replaced"),
    Mutation("lost7", "gpulease/transfer/files.py",
             "            except FETCH_ERRORS as exc:  # botocore already retried what is transient (its retry config)",
             "            except ZeroDivisionError as exc:", LOSS,
             "one artifact whose fetch fails does not abandon the rest"),
    Mutation("lost7", "gpulease/transfer/run.py",
             "                    except ObjectFetchError as exc:  # this object only (the SDK retried it): the rest go on",
             "                    except ZeroDivisionError as exc:", ("tests/transfer/test_pull_object_fails.py",),
             "pull: one object whose download fails fails alone"),
    Mutation("lost7", "gpulease/ephemeral/orchestrator.py",
             "        return stack_buckets(state.outputs)\n", "        return ()\n", KEPT,
             "artifacts not collected keep the checkpoint bucket at teardown"),
    Mutation("lost7", "gpulease/ephemeral/backend.py",
             "        keep.add(urn)\n        wanted += _needs(by_urn[urn])",
             "        keep.add(urn)\n        _needs(by_urn[urn])", KEPT,
             "the kept bucket keeps what it depends on and its parents"),
    Mutation("lost7", "gpulease/ephemeral/artifact_bounds.py",
             "            if len(within) >= self.max_objects:", "            if False:", BOUNDED,
             "artifacts are collected up to --max-artifacts"),
    Mutation("lost7", "gpulease/ephemeral/artifact_bounds.py",
             "            elif total + size > self.max_bytes:", "            elif False:", BOUNDED,
             "artifacts are collected up to --max-artifacts-gib"),
    Mutation("lost7", "gpulease/transfer/files.py",
             "            if (why := stop()) is not None:", "            if (why := None) is not None:", BOUNDED,
             "no artifact download starts past --collect-minutes"),
    Mutation("lost7", "gpulease/cli/shown.py", "    return escape(printable(str(value)))", "    return str(value)", SHOWN,
             "reap and ls show remote values escaped for rich and the terminal"),
    Mutation("lost7", "gpulease/ephemeral/progress.py", "    return escape(printable(str(value)))",
             "    return str(value)", SHOWN, "the run summary shows instance-written text escaped"),
    Mutation("lost7", "gpulease/cli/init.py", "    refuse_hidden(Path(path),", "    (lambda *a: None)(Path(path),",
             SHOWN, "init --output with a hidden character is refused"),
    Mutation("lost7", "gpulease/cli/catalog.py", "        console.print(f\"[red]failed[/red]: {shown_value(line)}\")",
             "        console.print(f\"[red]failed[/red]: {line}\")", ("tests/catalog_refresh/test_report_escaped.py",),
             "catalog refresh failures shown escaped"),
    Mutation("lost7", "gpulease/transfer/files.py",
             "stat.S_ISREG(found.st_mode) and p.is_symlink() and not _inside(p, path):",
             "stat.S_ISREG(found.st_mode) and False:", ("tests/transfer/test_push_links_outside.py",),
             "push leaves out a symlink to a file outside the folder"),
    Mutation("lost7", "gpulease/ephemeral/artifact_bounds.py",
             "                with limits.armed():\n                    fetch(name, path)",
             "                if True:\n                    fetch(name, path)", ("tests/ephemeral/test_artifacts_trickle.py",),
             "a download already running is cut off at the collect deadline (--collect-minutes)"),
]
