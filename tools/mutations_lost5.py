"""``make mutate`` rows for the pull that fails an object whose name is a file where another needs a folder (the
rest arrives), and ``ephemeral run --artifacts-dir`` refused among the run's inputs: each edit removes one check,
and the named tests must fail."""

from __future__ import annotations

from tools.mutation_row import Mutation

SHAPES = ("tests/transfer/test_pull_file_or_folder.py",)
ARTIFACTS = ("tests/ephemeral/test_artifacts_dir.py",)
UNKNOWN_COMPUTE = ("tests/review/test_unknown_compute.py", "tests/review/test_unknown_compute_more.py")
UC = "gpulease/review/unknown_compute.py"
SKIPPED_RUN = ("tests/review/test_skipped_applies_run.py",)

MUTATIONS: list[Mutation] = [
    Mutation("lost5", "gpulease/transfer/files.py", "        if above is not None:", "        if False:", SHAPES,
             "a key below another key's file fails on its own instead of stopping the pull"),
    Mutation("lost5", "gpulease/transfer/files.py", "        if here in self.folders:", "        if False:", SHAPES,
             "a key at another key's folder fails on its own"),
    Mutation("lost5", "gpulease/transfer/run.py", "                    if clash := shapes.conflict(key):",
             "                    if clash := None:", SHAPES, "pull checks each key against the others it pulls"),
    Mutation("lost5", "gpulease/transfer/run.py", "            return f\"would be a stack file in {Path(read).parent}, beside the ones this project deploys\"",
             "            return None", ("tests/transfer/test_pull_changed_objects.py",),
             "a pull into the project never adds a stack file beside the ones it deploys"),
    Mutation("lost5", "gpulease/cli/output_file.py",
             "        if found is None and os.path.lexists(read) and _inside(_resolved(read), target):",
             "        if False:", ARTIFACTS, "--artifacts-dir holding Pulumi.yaml or the stack file is refused"),
    Mutation("lost5", "gpulease/cli/output_file.py", "        if _inside(target, _resolved(inner)):", "        if False:",
             ARTIFACTS, "--artifacts-dir inside the stack files' folder is refused"),
    Mutation("lost5", "gpulease/cli/ephemeral.py",
             "        refuse_input_folder(args.artifacts_dir, reads, within=within)", "        pass", ARTIFACTS,
             "ephemeral run checks --artifacts-dir before anything is created"),
    Mutation("unknown-compute", UC,
             "        if any(holds_unknown(value) for value in read_all(props, path)):\n            return _path_prefix(",
             "        if False:\n            return _path_prefix(", UNKNOWN_COMPUTE,
             "an instance type path unknown at preview makes the review partial"),
    Mutation("unknown-compute", UC, "    if form.type_reader is not None and holds_unknown(list(form.type_reader(props))):",
             "    if False:", UNKNOWN_COMPUTE, "types a form's reader cannot know (a NodePool's unknown spec) are partial"),
    Mutation("unknown-compute", UC, "        if not pulumi.runtime.is_dry_run():", "        if True:", UNKNOWN_COMPUTE,
             "a stack reference output the mocks do not answer is unknown, never an absent value"),
    Mutation("unknown-compute", "gpulease/review/render.py", "            self.duplicates.append(unknown)  # a compute",
             "            pass  # a compute", UNKNOWN_COMPUTE, "the unknown-compute line reaches the render's error"),
    Mutation("unknown-compute", "gpulease/core/compute/scan.py",
             "            if (found := _named_setting(node)) is not None:", "            if False:", UNKNOWN_COMPUTE,
             "a name/value setting naming a GPU type (Elastic Beanstalk) is GPU compute"),
    Mutation("unknown-compute", "gpulease/review/invoke_sites.py", "    except (ValueError, TypeError) as exc:",
             "    except ZeroDivisionError as exc:", UNKNOWN_COMPUTE, "an unsendable input names the line"),
    Mutation("unknown-compute", "gpulease/review/invoke_sites.py",
             "        if value is not None and not isinstance(value, str):", "        if False:", UNKNOWN_COMPUTE,
             "a custom timeout that is not a duration string names the line"),
    Mutation("unknown-compute", UC, "    return _first_unknown(value, \"\") is not None",
             "    return value is UNKNOWN", UNKNOWN_COMPUTE,
             "an unknown element inside an instance types list (no '*' step) is partial"),
    Mutation("unknown-compute", "gpulease/review/engine.py",
             "    return resource.inputs if struct is None else wire_values(struct)", "    return resource.inputs",
             UNKNOWN_COMPUTE, "a size unknown offline makes the worst case unknown, never one instance"),
    Mutation("unknown-compute", "gpulease/core/compute/scan.py",
             "                if unknowns and (_type_key(key) or key in NODE_LABELS or key in COUNT_KEYS) and _holds_unknown(child):",
             "                if False:", UNKNOWN_COMPUTE,
             "a GPU-deciding input unknown offline on a type outside the registry (EMR, Kubernetes) is partial"),
    Mutation("unknown-compute", "gpulease/review/skipped_applies.py",
             "            if not known:\n                runs.run(func, site)",
             "            if False:\n                runs.run(func, site)", UNKNOWN_COMPUTE + SKIPPED_RUN,
             "an apply skipped at preview is run offline with the unknown marker"),
    Mutation("unknown-compute", "gpulease/review/skipped_applies.py",
             "            runs.add(registered_line(str(kind), str(name), runs.sites[-1]))", "            pass",
             UNKNOWN_COMPUTE, "a resource registered by an apply run offline makes the review partial"),
    Mutation("unknown-compute", "gpulease/review/skipped_applies.py",
             "        except Exception:\n            if may_register(func):\n                self.add(skipped_line(site))",
             "        except Exception:\n            pass", UNKNOWN_COMPUTE,
             "a callback that raises offline falls back to the static rule"),
    Mutation("unknown-compute", "gpulease/review/skipped_applies.py",
             "    if isinstance(value, types.FunctionType | types.MethodType):\n        return may_register(value, depth + 1)",
             "    if isinstance(value, types.FunctionType | types.MethodType):\n        return False", UNKNOWN_COMPUTE,
             "a program helper the skipped callback calls is read by the same rule"),
    Mutation("unknown-compute", "gpulease/review/thread_errors.py", "    threading.excepthook = hook",
             "    pass", UNKNOWN_COMPUTE, "a thread's failure is one line of a partial review"),
]
