"""The property names of the provider SDKs' output types, for the static rule (``gpulease/review/static_rule.py``).

A resource's nested output is an instance of its provider SDK's ``@pulumi.output_type`` class, built from the
engine's answer (``pulumi_aws/eks/outputs.py``'s ``ClusterCertificateAuthority``, read as
``cluster.certificate_authority.apply(lambda ca: ca.data)``), and each of its properties only reads the value
(``pulumi.get(self, "data")``). So reading one of those names on a value a callback computes is harmless. The
names alone are allowed: an object of the program's reached by the callback is judged by the rule's walk, which
lets no program class or instance through, whatever its attributes are called.

The names are read from the provider SDK modules already imported (a program's resources import their package's
``outputs``), lazily: only when the rule meets a name off its fixed list, and again only after more modules were
imported. Provider SDK modules are those named ``pulumi_<provider>…outputs`` or ``pulumiverse_<provider>…outputs``
that are no file of the program.
"""

from __future__ import annotations

import sys

from gpulease.review.invoke_sites import is_program_file

PREFIXES = ("pulumi_", "pulumiverse_")
_FLAG = "_pulumi_output_type"  # set on the class by ``pulumi.output_type`` (``pulumi/_types.py``)
_NAMES: set[str] = set()
_SCANNED: set[str] = set()
_SEEN = [0]  # len(sys.modules) when last scanned


def is_output_property(name: str) -> bool:
    """Whether ``name`` is a property of an output type of a provider SDK imported so far."""
    if name in _NAMES:
        return True
    if len(sys.modules) != _SEEN[0]:
        _scan()
    return name in _NAMES


def _scan() -> None:
    modules = list(sys.modules.items())
    _SEEN[0] = len(modules)
    for module_name, module in modules:
        if module_name in _SCANNED or not module_name.startswith(PREFIXES) or not module_name.endswith("outputs"):
            continue
        _SCANNED.add(module_name)
        if module_name.rpartition(".")[2] != "outputs" or is_program_file(getattr(module, "__file__", None) or ""):
            continue
        for cls in list(vars(module).values()):
            if isinstance(cls, type) and cls.__module__ == module_name and vars(cls).get(_FLAG) is True:
                _NAMES.update(k for k, v in vars(cls).items() if type(v) is property and not k.startswith("_"))
