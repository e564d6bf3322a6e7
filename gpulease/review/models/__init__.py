"""The component models: one file per multi-language component, each registering into
``gpulease.review.mock_registry.COMPONENTS`` when imported (``remote_components`` for what a model does).

Every module of this package is imported here, so adding a model is adding its file. No model imports the
component's SDK: a model answers by type token, and ordinary stacks never load ``pulumi_eks`` or ``pulumi_awsx``.
"""

from __future__ import annotations

import importlib
import pkgutil

for _module in pkgutil.iter_modules(__path__):
    importlib.import_module(f"{__name__}.{_module.name}")
