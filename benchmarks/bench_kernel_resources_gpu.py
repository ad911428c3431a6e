"""What the GPU's own compiler made of the forward kernels: registers, local memory (spills,
arrays placed in memory) and the NVRTC, runtime and driver versions, read from CuPy's
compiled functions on the device (``cupy.cuda.Function.attributes``). The cubins stay in
CuPy's cache folder (``CUPY_CACHE_DIR``; each file is a 32-byte hash then the cubin), to
be disassembled with ``cuobjdump -sass`` elsewhere.

    CUPY_CACHE_DIR=/tmp/cache python3 benchmarks/kernel_resources_gpu.py --shapes 4,32 4,16
"""
from __future__ import annotations

import argparse


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--shapes", nargs="+", default=["4,32", "4,16", "8,32"],
                        help="G,R of the 16-bit forward kernels")
    args = parser.parse_args()
    import cupy

    from swdask.gpu import _kernels
    from swdask.gpu._runtime import _cupy_function

    print(f"nvrtc {cupy.cuda.nvrtc.getVersion()}, runtime "
          f"{cupy.cuda.runtime.runtimeGetVersion()}, driver "
          f"{cupy.cuda.runtime.driverGetVersion()}", flush=True)
    names = [("inter_task.cu", _kernels.forward_name(2, *(int(v) for v in s.split(","))))
             for s in args.shapes]
    names.append(("reverse.cu", _kernels.reverse_name()))
    for source, name in names:
        attributes = _cupy_function(0, source, name).attributes
        keys = ("num_regs", "local_size_bytes", "shared_size_bytes", "binary_version",
                "ptx_version")
        print(f"{name}: " + ", ".join(f"{k} {attributes.get(k)}" for k in keys), flush=True)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
