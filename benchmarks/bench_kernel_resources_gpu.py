"""What the GPU's own compiler made of the forward kernels: registers, local memory (spills,
arrays placed in memory) and the NVRTC, runtime and driver versions, read from CuPy's
compiled functions on the device (``cupy.cuda.Function.attributes``). The cubins stay in
CuPy's cache folder (``CUPY_CACHE_DIR``; each file is a 32-byte hash then the cubin), to
be disassembled with ``cuobjdump -sass`` elsewhere.

The kernels are the variants ``swdask.lowlevel.kernel_variants`` lists for this GPU, compiled
as the engine compiles them (``get_backend("gpu").runtime.function``): the 16-bit forward
kernels of the shapes asked for (two targets per thread's lanes) and the reverse (start cell)
kernel; ``--match`` adds every variant whose name holds the text.

    CUPY_CACHE_DIR=/tmp/cache python3 benchmarks/bench_kernel_resources_gpu.py --shapes 4,32 4,16
"""
from __future__ import annotations

import argparse


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--shapes", nargs="+", default=["4,32", "4,16", "8,32"],
                        help="G,R of the 16-bit forward kernels")
    parser.add_argument("--match", nargs="*", default=[],
                        help="also every variant whose name expression holds this text")
    args = parser.parse_args()
    import cupy

    from swdask.lowlevel import get_backend, kernel_variants

    runtime = get_backend("gpu").runtime
    print(f"nvrtc {cupy.cuda.nvrtc.getVersion()}, runtime "
          f"{cupy.cuda.runtime.runtimeGetVersion()}, driver "
          f"{cupy.cuda.runtime.driverGetVersion()}", flush=True)
    variants = kernel_variants(runtime.compute_capability)
    wanted = [f"<swdask::Lanes16, {s.replace(',', ', ')}>" for s in args.shapes]
    names = [(source, name) for source, listed in variants.items() for name in listed
             if (source == "inter_task.cu" and any(name.endswith(w) for w in wanted))
             or source == "reverse.cu" or any(text in name for text in args.match)]
    missing = [s for s, w in zip(args.shapes, wanted)
               if not any(name.endswith(w) for _, name in names)]
    if missing:
        print(f"no 16-bit forward variant of shape {', '.join(missing)} on this GPU", flush=True)
    for source, name in names:
        attributes = runtime.function(source, name).attributes
        keys = ("num_regs", "local_size_bytes", "shared_size_bytes", "binary_version",
                "ptx_version")
        print(f"{name}: " + ", ".join(f"{k} {attributes.get(k)}" for k in keys), flush=True)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
