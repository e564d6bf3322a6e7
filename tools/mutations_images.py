"""``make mutate`` rows for a baked image's first boot: cloud-init's instance-id record from an earlier boot is not
this instance's id, and a key that cannot be read never empties ``authorized_keys``."""

from __future__ import annotations

from tools.mutation_row import Mutation

STATE = ("tests/instance/test_instance_state.py",)

MUTATIONS = [
    Mutation("images", "instance/instance_state.py", "            if os.stat(cloud_init_file).st_mtime < boot_time:",
             "            if False:", STATE, "cloud-init's record counts only when written during this boot"),
    Mutation("images", "instance/instance_setup.py", "    if keys is None:\n", "    if False:\n", STATE,
             "a key read that fails leaves authorized_keys as it is, pending"),
    Mutation("images", "instance/instance_setup.py",
             "        if previous is not None and forget_old_keys(settings, previous):",
             "        if previous is not None and (forget_old_keys(settings, previous) or True):", STATE,
             "the old keys stay pending until they were dropped"),
]
