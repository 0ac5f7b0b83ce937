#!/usr/bin/env python3
"""workloads/train/torchrun_compat.py: torchrun (python3 -m torch.distributed.run), made to
work with torch 1.13 on Python 3.11.

trnbench's pytorch executor launches training as

    python3 torchrun_compat.py --standalone --nproc_per_node K llama_train.py ARGS...

which is `python3 -m torch.distributed.run` with the same arguments: this file only
runs that module as __main__. Where torch is older than 2.0 and Python 3.11 or later
(Debian 12's python3-torch 1.13.1 under its Python 3.11, what CI installs), it first
repairs Std.from_str of torch.distributed.elastic: it looks a value up by iterating
over the IntFlag Std, and from Python 3.11 iterating a flag yields only its one-bit
members, so "0" (Std.NONE, the default of --redirects and --tee) becomes None and
torchrun fails at start with "AttributeError: 'NoneType' object has no attribute
'get'". torch 2.0 builds the member from its value instead, as the repair does. With
a newer torch nothing is changed.
"""
import runpy
import sys


def repair():
    try:
        import torch
        from torch.distributed.elastic.multiprocessing import api
    except ImportError:
        return  # runpy below says what is missing
    major = int(torch.__version__.split(".")[0])
    if major >= 2 or sys.version_info < (3, 11) or api.Std.from_str("0") is not None:
        return
    original = api.Std.from_str.__func__

    def from_str(cls, vm):
        """"0" -> Std.NONE, "0:3,1:0" -> {0: Std.ALL, 1: Std.NONE}; anything else as before."""
        try:
            if vm.strip().isdigit():
                return cls(int(vm))
            return {int(i): cls(int(v)) for i, v in (m.split(":") for m in vm.split(","))}
        except ValueError:
            return original(cls, vm)  # its own error for a malformed value
    api.Std.from_str = classmethod(from_str)


if __name__ == "__main__":
    repair()
    sys.argv[0] = "torch.distributed.run"
    runpy.run_module("torch.distributed.run", run_name="__main__", alter_sys=True)
