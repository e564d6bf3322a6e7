"""The provider SDKs' output types and their property names, and the SDKs' own code files, for the static rule
(``gpulease/review/static_rule.py``).

A resource's nested output is an instance of its provider SDK's ``@pulumi.output_type`` class, built from the
engine's answer (``pulumi_aws/eks/outputs.py``'s ``ClusterCertificateAuthority``, read as
``cluster.certificate_authority.apply(lambda ca: ca.data)``), and each of its properties only reads the value
(``pulumi.get(self, "data")``). A lookup's result is one too: the generated ``get_*.py`` module of a lookup
declares its result class with the same decorator (``pulumi_aws/get_caller_identity.py``: ``@pulumi.output_type
class GetCallerIdentityResult``), and ``get_*_output`` builds it from the engine's answer. So reading one of those
names on a value a callback computes is harmless. The names alone are allowed: an object of the program's reached
by the callback is judged by the rule's walk, which lets no program class or instance through, whatever its
attributes are called. An object of such a class itself (``is_output_value``) holds only what the engine answered:
the rule reads what it holds (a ``dict`` subclass such as ``ClusterVpcConfig`` its items, any other its instance
attributes).

The names are read from the provider SDK modules already imported (a program's resources import their package's
``outputs``, a lookup its ``get_*`` module), lazily: only when the rule meets a name off its fixed list, and again
only after more modules were imported. Provider SDK modules are those named ``pulumi_<provider>…outputs`` or
``pulumi_<provider>…get_<lookup>`` (also ``pulumiverse_<provider>…``) whose file is in an installed package
(``is_sdk_file``).
"""

from __future__ import annotations

import os
import sys
import sysconfig
from pathlib import Path
from typing import Any

import pulumi

PREFIXES = ("pulumi_", "pulumiverse_")
_FLAG = "_pulumi_output_type"  # set on the class by ``pulumi.output_type`` (``pulumi/_types.py``)
_NAMES: set[str] = set()
_SCANNED: set[str] = set()
_SEEN = [0]  # len(sys.modules) when last scanned


def _package_dirs() -> tuple[str, ...]:
    """The directories installed packages live in (``site-packages``, and the one ``pulumi`` was imported from)."""
    paths = sysconfig.get_paths()
    dirs = {paths[k] for k in ("purelib", "platlib") if paths.get(k)} | {str(Path(pulumi.__file__).parent.parent)}
    dirs |= {str(Path(p).resolve()) for p in dirs}
    return tuple(sorted(d.rstrip(os.sep) + os.sep for d in dirs))


_PACKAGE_DIRS = _package_dirs()
_SDK_FILES: dict[str, bool] = {}


def is_sdk_file(filename: str) -> bool:
    """A code file of the installed pulumi SDK or of an installed provider SDK: in an installed packages
    directory, inside the package ``pulumi``, ``pulumi_<provider>`` or ``pulumiverse_<provider>``."""
    known = _SDK_FILES.get(filename)
    if known is None:
        tops = [filename[len(base):].partition(os.sep) for base in _PACKAGE_DIRS if filename.startswith(base)]
        known = _SDK_FILES[filename] = any(sep and (top == "pulumi" or top.startswith(PREFIXES))
                                           for top, sep, _ in tops)
    return known


def is_output_property(name: str) -> bool:
    """Whether ``name`` is a property of an output type of a provider SDK imported so far."""
    if name in _NAMES:
        return True
    if len(sys.modules) != _SEEN[0]:
        _scan()
    return name in _NAMES


def _sdk_class(cls: Any) -> bool:
    """A class a provider SDK module defines: exactly a ``type``, the attribute of its module by its name, the
    module's file in an installed provider package."""
    module = sys.modules.get(getattr(cls, "__module__", None) or "")
    return (type(cls) is type and module is not None and vars(module).get(cls.__name__) is cls
            and str(module.__name__).startswith(PREFIXES) and is_sdk_file(getattr(module, "__file__", None) or ""))


def is_output_value(value: Any) -> bool:
    """Whether ``value`` is an instance of a provider SDK's ``@pulumi.output_type`` class (or of its SDK's own
    subclass of one, such as ``AwaitableGetCallerIdentityResult``): each class of its type's MRO but ``dict`` and
    ``object`` one a provider SDK module defines, one of them marked by ``pulumi.output_type``."""
    mro = [c for c in type(value).__mro__ if c is not dict and c is not object]
    return (bool(mro) and all(_sdk_class(c) for c in mro) and any(vars(c).get(_FLAG) is True for c in mro))


def _scan() -> None:
    modules = list(sys.modules.items())
    _SEEN[0] = len(modules)
    for module_name, module in modules:
        if module_name in _SCANNED or not module_name.startswith(PREFIXES):
            continue
        last = module_name.rpartition(".")[2]
        if last != "outputs" and not last.startswith("get_"):
            continue
        _SCANNED.add(module_name)
        if not is_sdk_file(getattr(module, "__file__", None) or ""):
            continue
        for cls in list(vars(module).values()):
            if isinstance(cls, type) and cls.__module__ == module_name and vars(cls).get(_FLAG) is True:
                _NAMES.update(k for k, v in vars(cls).items() if type(v) is property and not k.startswith("_"))
