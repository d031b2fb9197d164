# A stand-in for torch where only Triton is installed (.venv-triton): kernels/triton/mla_decode.py
# imports torch for its launcher, which a plan never calls. check_cli's Triton resource test puts this
# directory on PYTHONPATH so that the module can be described and its configs compiled.
