"""Training benchmark: one glassllm training step against PyTorch's, medians and ratios
measured in one run.

    python scripts/bench_train.py [--rounds 6] [--block 3] [--threads 1]

One step is the gradient of a batch's mean cross-entropy and one AdamW update:
``GlassLM.gradients`` + ``glassllm.optim.AdamW.step`` against autograd through
``transformers``' LlamaForCausalLM (its ``sdpa`` and ``eager`` attention) +
``torch.optim.AdamW``, on the same weights and batch, with the same number of threads for
NumPy's BLAS and PyTorch. The weights are initialised as ``python -m glassllm train`` and
``transformers`` do for training (every matrix N(0, 0.02), the norms' gains 1), so the logits
start near zero as in a real run.

- d128, 2 layers, vocabulary 2048, tied embeddings, a batch of 8 x 128 tokens
- d288, 6 layers, vocabulary 4096, a batch of 4 x 128 tokens         target <= 1.0x

Timings are medians of blocked rounds (``bench_engine.blocked_medians``: each side runs
alone for a block of calls, blocks alternate), in CPU time of this process when both sides
run one thread (on a shared machine what the step costs a core of its own; ``--wall`` for
wall-clock time), in wall-clock time otherwise. Memory: each side's step runs in a fresh
process, and the peak resident memory of three steps (Linux's ``VmHWM``, reset once the model
is built) is given above what the process held then (the weights): optimiser moments,
gradients, activations kept for the backward pass and temporaries. (Not ``ru_maxrss``: a
process started by a large one inherits its parent's.) For glassllm, ``tracemalloc`` also
gives the peak of the NumPy arrays one step allocates (the moments exist before it).
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import time
import tracemalloc
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "scripts"))

from bench_engine import (blas_threads, blocked_medians, finish, report,  # noqa: E402
                          set_blas_threads)
from glassllm import Config, GlassLM  # noqa: E402
from glassllm.checkpoint import config_to_hf  # noqa: E402
from glassllm.optim import AdamW  # noqa: E402

CASES = {
    "d128, L2, V2048, tied, 8 x 128": (8, dict(
        vocab_size=2048, d_model=128, n_layers=2, n_heads=4, n_kv_heads=2, max_len=128,
        tie_word_embeddings=True)),
    "d288, L6, V4096, 4 x 128": (4, dict(
        vocab_size=4096, d_model=288, n_layers=6, n_heads=6, n_kv_heads=6, max_len=128)),
}
SETTINGS = dict(lr=1e-4, betas=(0.9, 0.95), eps=1e-8, weight_decay=0.1)
SIDES = ("glassllm", "sdpa", "eager")


def batch(case: str) -> np.ndarray:
    rows, fields = CASES[case]
    return np.random.default_rng(0).integers(0, fields["vocab_size"],
                                             (rows, fields["max_len"] + 1))


def training_model(case: str) -> GlassLM:
    """The case's model with the initialisation training uses: N(0, 0.02) matrices."""
    model = GlassLM(Config(**CASES[case][1]))
    rng = np.random.default_rng(0)
    model.load_state_dict({
        name: (rng.standard_normal(value.shape, dtype=np.float32) * np.float32(0.02)
               if value.ndim == 2 else value) for name, value in model.state_dict().items()})
    return model


def glassllm_step(case: str):
    """One training step of glassllm on the case's batch, as a function."""
    model = training_model(case)
    optimizer = AdamW(model, **SETTINGS)
    rows = batch(case)

    def step():
        _, grads = model.gradients(rows[:, :-1], rows[:, 1:])
        optimizer.step(grads)
    return step


def torch_step(case: str, attention: str):
    """The same step in PyTorch: transformers' Llama with ``model``'s initial weights."""
    import torch
    from transformers import LlamaConfig, LlamaForCausalLM
    model = training_model(case)
    c = model.config
    twin = LlamaForCausalLM(LlamaConfig(**config_to_hf(c), attn_implementation=attention))
    twin.load_state_dict({k: torch.from_numpy(v) for k, v in model.state_dict().items()},
                         strict=not c.tie_word_embeddings)
    twin.train()
    optimizer = torch.optim.AdamW(twin.parameters(), **SETTINGS)
    rows = torch.from_numpy(batch(case))
    inputs, targets = rows[:, :-1], rows[:, 1:].reshape(-1)

    def step():
        logits = twin(inputs, use_cache=False).logits
        loss = torch.nn.functional.cross_entropy(logits.reshape(-1, c.vocab_size), targets)
        optimizer.zero_grad(set_to_none=True)
        loss.backward()
        optimizer.step()
    return step


def make_step(case: str, side: str):
    return glassllm_step(case) if side == "glassllm" else torch_step(case, side)


def resident(field: str) -> int:
    """``VmRSS`` (now) or ``VmHWM`` (the peak) of this process in bytes, from Linux's
    /proc/self/status."""
    with open("/proc/self/status") as file:
        for line in file:
            if line.startswith(field + ":"):
                return int(line.split()[1]) * 1024  # kB
    raise OSError(f"/proc/self/status has no {field}")


def reset_peak() -> None:
    """Make VmHWM the current resident size (Linux 4.0+)."""
    with open("/proc/self/clear_refs", "w") as file:
        file.write("5")


def memory_child(case: str, side: str, threads: int) -> None:
    """Run in a fresh process: the peak memory of three steps above the built model's."""
    if side != "glassllm":
        import torch
        torch.set_num_threads(threads)
    set_blas_threads(threads)
    step = make_step(case, side)
    reset_peak()
    before = resident("VmRSS")
    for _ in range(3):
        step()
    print(json.dumps({"peak_above_model": resident("VmHWM") - before}))


def peak_memory(case: str, side: str, threads: int) -> int | None:
    if not os.path.exists("/proc/self/clear_refs"):
        return None  # not Linux
    done = subprocess.run([sys.executable, __file__, "--memory-child", case, side,
                           "--threads", str(threads)], capture_output=True, text=True,
                          check=True, env={**os.environ, "OMP_NUM_THREADS": str(threads)})
    return json.loads(done.stdout.strip().splitlines()[-1])["peak_above_model"]


def numpy_step_peak(case: str) -> int:
    """The peak bytes of NumPy arrays one glassllm step allocates (after a warm-up step)."""
    step = glassllm_step(case)
    step()
    tracemalloc.start()
    step()
    peak = tracemalloc.get_traced_memory()[1]
    tracemalloc.stop()
    return peak


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description="glassllm training-step benchmark")
    parser.add_argument("--rounds", type=int, default=6, help="alternating rounds (default 6)")
    parser.add_argument("--block", type=int, default=3, help="timed calls per side per round")
    parser.add_argument("--threads", type=int, default=1,
                        help="threads for both NumPy's BLAS and PyTorch (default 1)")
    parser.add_argument("--wall", action="store_true",
                        help="time in wall-clock seconds even with one thread")
    parser.add_argument("--no-memory", action="store_true", help="skip the memory figures")
    parser.add_argument("--memory-child", nargs=2, metavar=("CASE", "SIDE"),
                        help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.memory_child:
        memory_child(*args.memory_child, args.threads)
        return 0
    try:
        import torch
    except ImportError as error:
        print(f"needs torch and transformers: {error} (pip install torch==2.13.0 transformers)")
        return 1
    torch.set_num_threads(args.threads)
    set_blas_threads(args.threads)
    if hasattr(os, "getloadavg"):
        print("load average %.2f %.2f %.2f on %d cores" % (*os.getloadavg(), os.cpu_count()))
    cpu = args.threads == 1 and not args.wall
    clock = time.process_time if cpu else time.perf_counter
    print(f"torch {torch.__version__}, {torch.get_num_threads()} threads; numpy "
          f"{np.__version__}, BLAS threads {blas_threads()}; blocked rounds of {args.block} "
          f"calls; {'CPU' if cpu else 'wall-clock'} time")
    ok = True
    for case in CASES:
        steps = {side: make_step(case, side) for side in SIDES}
        times = blocked_medians(steps, args.rounds, args.block, clock)
        for attention in ("sdpa", "eager"):
            ok &= report(f"training step vs PyTorch {attention} ({case})", times["glassllm"],
                         times[attention], 1.0, ("glassllm", "torch"))
        if not args.no_memory:
            peaks = {side: peak_memory(case, side, args.threads) for side in SIDES}
            print(f"  peak memory of a step above the model's weights: "
                  + ", ".join(f"{side} {peaks[side] / 1e6:.1f} MB" if peaks[side] is not None
                              else f"{side} unknown (Linux only)" for side in SIDES)
                  + f"; NumPy arrays one glassllm step allocates (tracemalloc): "
                    f"{numpy_step_peak(case) / 1e6:.1f} MB")
    return finish(ok)


if __name__ == "__main__":
    sys.exit(main())
