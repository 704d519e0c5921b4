"""helpers' subpackages load a module only when one of its names is first used (lazy_loader)."""

import importlib
import subprocess
import sys

import pytest

SUBPACKAGES = ("experiments", "grading", "measure", "models", "plots")


@pytest.mark.parametrize("name", SUBPACKAGES)
def test_every_exported_name_resolves_and_all_lists_them(name):
    package = importlib.import_module(f"helpers.{name}")
    exported = {n for names in package._EXPORTS.values() for n in names}
    assert set(package.__all__) == exported
    for module, names in package._EXPORTS.items():
        source = importlib.import_module(f"helpers.{name}.{module}")
        for n in names:
            assert getattr(package, n) is getattr(source, n)
    assert exported <= set(dir(package))
    with pytest.raises(AttributeError, match=f"No helpers.{name} attribute no_such_name"):
        package.no_such_name  # noqa: B018


def test_using_one_name_loads_its_module_only():
    code = ("import sys, helpers.measure as m\n"
            "before = {k for k in sys.modules if k.startswith('helpers.measure.')}\n"
            "m.path_length_counts(2)\n"
            "after = {k for k in sys.modules if k.startswith('helpers.measure.')}\n"
            "assert before == set(), before\n"
            "assert after == {'helpers.measure.paths'}, after\n")
    subprocess.run([sys.executable, "-c", code], check=True)


def test_a_name_shared_by_a_function_and_its_module_gives_the_function():
    code = ("import importlib, helpers.experiments as e\n"
            "importlib.import_module('helpers.experiments.effective_depth')\n"
            "assert callable(e.effective_depth) and e.effective_depth.__name__ == 'effective_depth'\n"
            "import helpers\n"
            "assert {'glue', 'measure', 'seed_everything'} <= set(dir(helpers))\n")
    subprocess.run([sys.executable, "-c", code], check=True)
