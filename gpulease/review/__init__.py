"""The offline review engine behind ``gpulease plan`` (and ``cost``, CI and the benchmarks): ``stacks`` finds them,
``render`` runs the program under ``mocks``, ``policy_runner`` runs the pack through its analyzer path, ``engine``
puts a review together (with the cost), ``report`` and ``terminal`` show it, ``replacement`` classifies what a
change replaces. Nothing here imports the program's Pulumi modules: ``render`` runs it."""
