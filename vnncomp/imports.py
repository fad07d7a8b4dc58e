"""Imports by file location, for Python that is not on sys.path: a generated model in an output
folder, a package outside the repository (auto_LiRPA in ../shared/clients, torchonnx's package in
the build tree), a script of benchmarks/ used as a library. Nothing is added to sys.path, except a
generated model's folder while that model executes (module(..., with_folder=True)).

The repository's own packages (vnncomp) are found through the repository root on sys.path: ctest
and the shell wrappers put it on PYTHONPATH, `python3 -m` from the root has it, and a script run by
path (`python3 benchmarks/x.py`) runs itself again with it on PYTHONPATH before importing vnncomp.
"""

import importlib.util
import os
import sys


def module(name, path, with_folder=False):
    """Executes the file `path` as the module `name`, registered in sys.modules (forked children
    and pickling find it there). with_folder: the file's folder heads sys.path while the file
    executes and is taken off after, for generated code that imports a module kept next to it (the
    module of its --custom-op functions)."""
    spec = importlib.util.spec_from_file_location(name, path)
    if spec is None:
        raise ImportError(f"{path}: not a Python file")
    mod = importlib.util.module_from_spec(spec)
    sys.modules[name] = mod
    folder = os.path.dirname(os.path.abspath(path))
    if with_folder:
        sys.path.insert(0, folder)
    try:
        spec.loader.exec_module(mod)
    except BaseException:
        del sys.modules[name]
        raise
    finally:
        if with_folder:
            sys.path.remove(folder)
    return mod


def package(name, parent):
    """The package folder parent/name imported as `name` (its __init__.py; its submodules then import
    by their dotted names), or the module already imported under that name."""
    if name in sys.modules:
        return sys.modules[name]
    return module(name, os.path.join(parent, name, "__init__.py"))
