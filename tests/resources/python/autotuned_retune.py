"""autotuned.py with a new autotune key at every launch: Triton's Autotuner benchmarks its configs
again each time, the timed launches included (issue 41, item 3: a task whose times include
benchmarking is flagged)."""
import autotuned

NAME = "test.py_autotuned_retune"
BACKEND = "cpu"
KV_DTYPES = autotuned.KV_DTYPES
SUMMARY = "autotuned.py, re-tuned at every launch"
configs = autotuned.configs
supports = autotuned.supports
DECODE = autotuned.DECODE
_launches = [0]


def launch(args, config):
    _launches[0] += 1
    autotuned.run(args, config, _launches[0])
