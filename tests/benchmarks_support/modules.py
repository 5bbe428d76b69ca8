"""Loading a benchmark script or a calibration file as a module, by path.

benchmarks/ is not a package: its scripts import their neighbours by bare name
(``from sim_calibration_scoring import ...``), so ``search_path`` puts their
folder on ``sys.path`` while the module runs its top level.
"""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path
from types import ModuleType


def load_module(name: str, path: Path, search_path: Path | None = None) -> ModuleType:
    """The module at ``path``, registered in ``sys.modules`` as ``name``."""
    spec = importlib.util.spec_from_file_location(name, path)
    assert spec is not None and spec.loader is not None, path
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module
    if search_path is not None:
        sys.path.insert(0, str(search_path))
    try:
        spec.loader.exec_module(module)
    finally:
        if search_path is not None:
            sys.path.remove(str(search_path))
    return module
