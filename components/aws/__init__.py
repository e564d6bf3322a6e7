"""AWS: the ``aws`` cloud (``cloud.py`` implements the contract of ``components/cloud.py``; ``spec.py`` is what the
spec accepts). Nothing is imported here, so that the spec can read ``spec.py`` without Pulumi."""
