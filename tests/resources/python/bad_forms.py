"""A bad declaration: a format of the sparse form in KV_DTYPES, FORMS left at dense."""
NAME = "test.py_bad_forms"
BACKEND = "cpu"
KV_DTYPES = ("bf16", "fp8_ds_mla")
SUMMARY = "fp8_ds_mla without FORMS"


def configs(arch):
    return []


def launch(args, config):
    pass
