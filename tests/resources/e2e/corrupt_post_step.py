"""A step module whose post() corrupts the step output (check_e2e.c): numpy_step's step with the
output scaled by 1.1 after o_proj, the same on both sides, so that only the comparison with the
module's reference() can catch it, and must."""
import importlib.util
import os

_here = os.path.dirname(os.path.realpath(__file__))
_spec = importlib.util.spec_from_file_location(
    "vs_test_numpy_step", os.path.join(_here, "..", "..", "..", "kernels", "python", "numpy_step.py"))
_base = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(_base)

NAME = "test.corrupt_post_step"
BACKEND = "cpu"
SUMMARY = "numpy_step with its output scaled by 1.1 in post()"
output_shape, supports, prepare, pre, reference = (_base.output_shape, _base.supports, _base.prepare,
                                                   _base.pre, _base.reference)


def post(args):
    _base.post(args)
    y = _base.bf16_to_f32(args.step_out) * 1.1
    args.step_out[:] = _base.f32_to_bf16(y)
