"""A bad declaration: BACKEND names no backend."""
NAME = "test.py_bad_decl"
BACKEND = "rocm"
KV_DTYPES = ("bf16",)
SUMMARY = "bad BACKEND"


def configs(arch):
    return []


def launch(args, config):
    pass
