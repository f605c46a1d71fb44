#!/usr/bin/env python3
"""Independent GEMM reference for ci/gpu-node.sh: PyTorch's own allocator, buffers and loop.

Times C = A @ B for each square N and dtype with CUDA events around batches of back-to-back
products (as scalebench's pipelined mode), and prints one CSV row per shape: the median over
batches of the time per product and its GFLOP/s (2 N^3 / t). f32 runs without TF32 (PyTorch's
default for matmul, and scalebench's without SCALEBENCH_CUDA_TF32). Inputs are uniform random,
not zeros (zeros run faster on Hopper). A fourth argument `pattern` fills scalebench's check
pattern instead (src/workload/gemm_check.rs: integers in [-2, 2], seed 1), to show what those
inputs do to the rate.
"""
import statistics
import sys

import torch


def main() -> None:
    dims = [int(d) for d in sys.argv[1].split(",")]
    dtypes = sys.argv[2].split(",")
    batches = int(sys.argv[3]) if len(sys.argv) > 3 else 20
    pattern = len(sys.argv) > 4 and sys.argv[4] == "pattern"
    torch.backends.cuda.matmul.allow_tf32 = False
    names = {"f32": torch.float32, "f64": torch.float64, "f16": torch.float16, "bf16": torch.bfloat16}
    print("reference,dtype,n,batches,per_batch,median_seconds,gflops")
    for dtype in dtypes:
        for n in dims:
            if pattern:
                i = torch.arange(n, device="cuda", dtype=torch.int64)
                # a(i, k) = (7i + 3k + 11) % 5 - 2, b(k, j) = (5k + 11j + 4) % 5 - 2 (seed 1).
                a = ((7 * i[:, None] + 3 * i[None, :] + 11) % 5 - 2).to(names[dtype])
                b = ((5 * i[:, None] + 11 * i[None, :] + 4) % 5 - 2).to(names[dtype])
            else:
                a = torch.rand(n, n, device="cuda", dtype=names[dtype])
                b = torch.rand(n, n, device="cuda", dtype=names[dtype])
            c = torch.empty(n, n, device="cuda", dtype=names[dtype])
            for _ in range(5):
                torch.matmul(a, b, out=c)
            torch.cuda.synchronize()
            # About 50 ms per batch, at least one product.
            start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
            start.record()
            torch.matmul(a, b, out=c)
            end.record()
            torch.cuda.synchronize()
            per = max(1, int(0.05 / max(start.elapsed_time(end) / 1e3, 1e-6)))
            times = []
            for _ in range(batches):
                start.record()
                for _ in range(per):
                    torch.matmul(a, b, out=c)
                end.record()
                end.synchronize()
                times.append(start.elapsed_time(end) / 1e3 / per)
            t = statistics.median(times)
            what = "pattern" if pattern else "random"
            print(f"torch {torch.__version__} {what},{dtype},{n},{batches},{per},{t:.9f},{2 * n**3 / t / 1e9:.1f}")
            del a, b, c
            torch.cuda.empty_cache()


if __name__ == "__main__":
    main()
