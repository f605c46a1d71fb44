#!/usr/bin/env python3
"""Independent GEMM reference for ci/gpu-node.sh and ci/device-check.sh: PyTorch's own
allocator, buffers and loop.

Times C = A @ B for each square N and dtype with CUDA events around batches of back-to-back
products (as scalebench's pipelined mode), and prints one CSV row per shape: the median over
batches of the time per product and its GFLOP/s (2 N^3 / t). f32 runs without TF32 (PyTorch's
default for matmul, and scalebench's without SCALEBENCH_CUDA_TF32).

Switches, so a comparison with scalebench can be made like-for-like:
  --dist unit     operands uniform in [0, 1) (torch.rand; the default, as before)
  --dist sym      operands uniform in [-1, 1) (scalebench's GEMM operands)
  --dist pattern  scalebench's check pattern (src/workload/gemm_check.rs: integers in [-2, 2])
  --entry matmul  torch.matmul (2-D: cublasGemmEx through at::cuda::blas::gemm; the default)
  --entry mm      torch.mm (the same cuBLAS entry, named explicitly)
  --entry bmm     torch.bmm with batch 1 (cublasGemmStridedBatchedEx: scalebench's entry point)
  --entry lt      torch.mm with cuBLASLt preferred (torch.backends.cuda.preferred_blas_library)
  --gpu-log       after each shape, nvidia-smi's SM clock, power and throttle reasons as columns
The old positional form `DIMS DTYPES [BATCHES] [pattern]` still works.
"""
import argparse
import statistics
import subprocess

import torch


def gpu_state() -> str:
    q = "clocks.sm,power.draw,clocks_throttle_reasons.active"
    try:
        r = subprocess.run(["nvidia-smi", f"--query-gpu={q}", "--format=csv,noheader,nounits"],
                           capture_output=True, text=True, timeout=10)
        return ",".join(v.strip() for v in r.stdout.splitlines()[0].split(","))
    except (OSError, IndexError, subprocess.SubprocessError):
        return ",,"


def operands(n: int, dtype, dist: str):
    if dist == "pattern":
        i = torch.arange(n, device="cuda", dtype=torch.int64)
        # a(i, k) = (7i + 3k + 11) % 5 - 2, b(k, j) = (5k + 11j + 4) % 5 - 2 (seed 1).
        a = ((7 * i[:, None] + 3 * i[None, :] + 11) % 5 - 2).to(dtype)
        b = ((5 * i[:, None] + 11 * i[None, :] + 4) % 5 - 2).to(dtype)
        return a, b
    a = torch.rand(n, n, device="cuda", dtype=dtype)
    b = torch.rand(n, n, device="cuda", dtype=dtype)
    if dist == "sym":
        a, b = a * 2 - 1, b * 2 - 1
    return a, b


def product(entry: str, a, b, c):
    if entry == "bmm":
        return lambda: torch.bmm(a.unsqueeze(0), b.unsqueeze(0), out=c.unsqueeze(0))
    if entry in ("mm", "lt"):
        return lambda: torch.mm(a, b, out=c)
    return lambda: torch.matmul(a, b, out=c)


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("dims")
    p.add_argument("dtypes")
    p.add_argument("old_batches", nargs="?", type=int)
    p.add_argument("old_pattern", nargs="?")
    p.add_argument("--batches", type=int, default=20)
    p.add_argument("--dist", choices=["unit", "sym", "pattern"], default="unit")
    p.add_argument("--entry", choices=["matmul", "mm", "bmm", "lt"], default="matmul")
    p.add_argument("--gpu-log", action="store_true")
    args = p.parse_args()
    batches = args.old_batches or args.batches
    dist = "pattern" if args.old_pattern == "pattern" else args.dist
    dims = [int(d) for d in args.dims.split(",")]
    torch.backends.cuda.matmul.allow_tf32 = False
    if args.entry == "lt":
        torch.backends.cuda.preferred_blas_library("cublaslt")
    names = {"f32": torch.float32, "f64": torch.float64, "f16": torch.float16, "bf16": torch.bfloat16}
    head = "reference,dtype,n,batches,per_batch,median_seconds,gflops"
    print(head + (",sm_mhz,power_w,throttle" if args.gpu_log else ""))
    for dtype in args.dtypes.split(","):
        for n in dims:
            a, b = operands(n, names[dtype], dist)
            c = torch.empty(n, n, device="cuda", dtype=names[dtype])
            run = product(args.entry, a, b, c)
            for _ in range(5):
                run()
            torch.cuda.synchronize()
            # About 50 ms per batch, at least one product.
            start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
            start.record()
            run()
            end.record()
            torch.cuda.synchronize()
            per = max(1, int(0.05 / max(start.elapsed_time(end) / 1e3, 1e-6)))
            times = []
            for _ in range(batches):
                start.record()
                for _ in range(per):
                    run()
                end.record()
                end.synchronize()
                times.append(start.elapsed_time(end) / 1e3 / per)
            t = statistics.median(times)
            ref = f"torch {torch.__version__} {dist} {args.entry}"
            row = f"{ref},{dtype},{n},{batches},{per},{t:.9f},{2 * n**3 / t / 1e9:.1f}"
            print(row + ("," + gpu_state() if args.gpu_log else ""), flush=True)
            del a, b, c
            torch.cuda.empty_cache()


if __name__ == "__main__":
    main()
