"""configs() returns one name twice."""
NAME = "test.py_bad_configs"
BACKEND = "cpu"
KV_DTYPES = ("bf16",)
SUMMARY = "duplicate config names"


def configs(arch):
    return [{"name": "a", "block_n": 64}, {"name": "a", "block_n": 128}]


def launch(args, config):
    pass
