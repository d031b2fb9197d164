"""numpy.mla_decode's result, except that on a task with h_q 7 launch() kills the process that runs
the plan (SIGKILL, as a device lease that ends takes it): a run cut short after its first task, for
the test that the finished tasks' run.log lines survive in run.log.partial. It kills only a parent
whose command line is validate_skill's (else it raises)."""
import os
import signal
import sys
import time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "..",
                                "kernels", "python"))
import numpy_mla  # noqa: E402

NAME = "test.py_kills_runner"
BACKEND = "cpu"
KV_DTYPES = ("bf16", "fp8_e4m3_fnuz")
SUMMARY = "numpy.mla_decode; kills the runner on h_q 7"
configs = numpy_mla.configs


def _runner_pid():
    for pid in (os.getppid(),):
        try:
            with open(f"/proc/{pid}/cmdline", "rb") as f:
                argv0 = f.read().split(b"\0")[0]
        except OSError:
            continue
        if os.path.basename(argv0).startswith(b"validate_skill"):
            return pid
    return None


def launch(args, config):
    if args.q.shape[2] == 7:
        pid = _runner_pid()
        if pid is None:
            raise RuntimeError("the parent process is not validate_skill: not killing it")
        os.kill(pid, signal.SIGKILL)
        time.sleep(5)
        os._exit(1)
    numpy_mla.launch(args, config)
