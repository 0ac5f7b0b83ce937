#!/bin/sh
# tests/cli/gpu-cc80.t: tests/unit/gpu.c again on the CUDA emulator posing as a
# compute-capability 8.0 device (an A100; CUEMU_CC=80), so the refusals of fp8 below
# 8.9 (the op, the engine, the executor's skip reason) run here too, not only on an
# A100. Where a real GPU is present gpu.t runs on it instead, and this adds nothing.
# Needs TB_BUILDDIR (make check sets it).
if [ -e /dev/nvidiactl ] || [ -e /proc/driver/nvidia/version ]; then
    echo "1..0 # SKIP an NVIDIA driver is here: gpu.t runs on the real device"
    exit 0
fi
CUEMU_CC=80 exec "$TB_BUILDDIR/tests/gpu.t"
