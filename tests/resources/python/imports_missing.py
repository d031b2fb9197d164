"""Imports a package that does not exist (always, or only when VS_TEST_FAIL_IMPORT is set)."""
import os

if os.environ.get("VS_TEST_FAIL_IMPORT", "1") == "1":
    import vs_no_such_package  # noqa: F401  (line 5)

NAME = "test.py_imports_missing"
BACKEND = "cpu"
KV_DTYPES = ("bf16",)
SUMMARY = "imports vs_no_such_package"


def configs(arch):
    return [{"name": "only"}]


def launch(args, config):
    args.out[...] = 0
