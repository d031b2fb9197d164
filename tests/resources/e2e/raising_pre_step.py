"""A step module whose pre() raises (check_e2e.c): the e2e stage fails with its one line, the
task's isolated A/B stands."""
import importlib.util
import os

_here = os.path.dirname(os.path.realpath(__file__))
_spec = importlib.util.spec_from_file_location(
    "vs_test_numpy_step2", os.path.join(_here, "..", "..", "..", "kernels", "python", "numpy_step.py"))
_base = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(_base)

NAME = "test.raising_pre_step"
BACKEND = "cpu"
SUMMARY = "numpy_step whose pre() raises"
output_shape, supports, prepare, post = _base.output_shape, _base.supports, _base.prepare, _base.post


def pre(args):
    raise RuntimeError("pre() of the test step fails on purpose")
