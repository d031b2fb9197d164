"""launch() raises inside a helper: the bridge must report one line naming this file's frame."""
NAME = "test.py_raises"
BACKEND = "cpu"
KV_DTYPES = ("bf16",)
SUMMARY = "raises ValueError in launch"


def supports(shape):
    if shape.page_size == 16:
        return "page_size 16: this module reads pages of 64 rows"
    return None


def configs(arch):
    return [{"name": "only", "block_n": 64}]


def _inner(args):
    raise ValueError("block_n 64 does not divide\nthe page")  # line 19


def launch(args, config):
    _inner(args)
