"""A stand-in for torch, for importing tilelang where torch is not installed (the gfx942 gate's
TileLang half, tools/gpu/tilelang_amd_emit.py): TileLang and tvm_ffi read torch's dtypes and a few
attributes at import time, and code generation uses none of them. Every attribute is a named
placeholder; nothing here computes. Never on the path of a run that measures anything."""
import types

__version__ = "0+vs_stub"
version = types.SimpleNamespace(hip=None, cuda=None, __version__=__version__)
cuda = types.SimpleNamespace(is_available=lambda: False, device_count=lambda: 0, current_device=lambda: 0)


class _Placeholder:
    def __init__(self, name):
        self._name = name

    def __repr__(self):
        return "torch." + self._name

    def __call__(self, *args, **kwargs):
        return _Placeholder(self._name + "()")

    def __getattr__(self, name):
        if name.startswith("__"):
            raise AttributeError(name)
        return _Placeholder(self._name + "." + name)

    def __hash__(self):
        return hash(self._name)

    def __eq__(self, other):
        return isinstance(other, _Placeholder) and other._name == self._name

    def __bool__(self):
        return False

    def __iter__(self):
        return iter(())


class Tensor:
    pass


class dtype:
    pass


class device:
    def __init__(self, *args, **kwargs):
        pass


class Size(tuple):
    pass


_made = {}


def __getattr__(name):
    if name.startswith("__"):
        raise AttributeError(name)
    if name not in _made:
        _made[name] = _Placeholder(name)
    return _made[name]
