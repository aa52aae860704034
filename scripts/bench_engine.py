"""Engine benchmark: medians and ratios measured in one run.

    python scripts/bench_engine.py [--rounds 6] [--block 5] [--threads N] [--no-smollm]
                                   [--only forward|generation]

1. traced vs untraced forward (d_model 128, 4 layers, 64 tokens), next to the physical
   floor: the untraced forward plus a bare copy of the same snapshot bytes into memory
   that is already allocated                      target: traced <= floor + 0.10x
2. untraced glassllm vs Hugging Face LlamaForCausalLM on CPU, with its default attention
   (sdpa) and eager, at (d64, 2 layers, 16 tokens), (d288, 6 layers, 6 heads, vocab 32000,
   64 tokens) and SmolLM-135M's shape (d576, 30 layers, 9 heads, 3 KV heads, MLP 1536,
   vocab 49152, tied embeddings, 64 tokens; random weights built in memory)   target <= 1.0x
3. at SmolLM's shape, a forward traced with a filter of one step (Tracer(steps=
   "attn.softmax"), all 30 layers) vs untraced                           target <= 1.05x
4. greedy generation with the KV cache vs Hugging Face's LlamaForCausalLM.generate() with
   its own cache (sdpa), on the same weights, from a 32-token prompt: d288/L6 (+64 tokens)
   and SmolLM-135M's shape (+24 tokens); the tokens must be identical   target <= 1.0x
   Beside it, each token's cost against the physical floor: the bytes of the weights a
   token reads once (every block and the output matrix; one row of the embedding) over
   this machine's memory bandwidth, measured with a large np.copyto (bytes read + written).
   A copy also writes, so a token that only reads its weights can come in a little under
   this floor: read it as "how far from memory-bound", not as a hard limit
5. cost per token stays flat along a long generation (d128/L4 and d288/L6, 8-token prompt,
   200 new tokens): median of tokens 150-200 over tokens 10-60           target <= 1.5x

Timings are medians measured in blocked rounds: each side runs alone for a block of calls,
blocks alternate, and both sides use the same number of threads. Alternating call by call
is wrong on a small machine: after each call OpenBLAS' and PyTorch's worker threads keep
spinning for a while and steal the cores from the other side (it once made Hugging Face look
8x slower than it is). Parts 2-4 need torch and transformers. The load average is
printed first: on a shared machine compare the ratios, which are measured in the same
blocked rounds, rather than the times, and prefer --threads 1 when other jobs run.

Notes (what part 1 taught the tracer; measured on this project's machines: AMD Zen,
glibc 2.36, CPython 3.11)
- Reused memory for snapshots (glassllm/_snapshot_pool.py). A traced forward keeps
  megabytes of snapshots alive. When its tracer is dropped, glibc gives that memory back to
  the system, and the next tracer's copies land in fresh pages that the kernel must fault
  in and zero: at d_model 128 that cost more than the copies themselves. The pool keeps
  the buffers and hands them to the next copies.
- Pool buffers start on a page boundary. A contiguous copy is one memcpy, and where that
  uses `rep movsb` (AMD Zen with glibc 2.36) a destination 4 to 28 bytes past the source's
  offset within a 4 KiB page makes it 10-20x slower. A buffer allocated right after a heap
  block of the same size sits exactly 16 bytes past it modulo a page, and with this
  script's probe tracer alive one copy per forward hit that (21 of 940 copies, once). On a
  page boundary, the band holds only sources that start in the last 28 bytes of a page,
  which malloc's 16-byte alignment makes one offset in 256, and nothing pairs them
  systematically any more (checking each copy's addresses instead cost more than it saved).
- glassllm.trace.record handles the engine's usual call itself. A forward makes 75 record
  calls even at toy size, between NumPy calls that push the interpreter's data out of the
  CPU caches, so every Python operation there shows in part 1's ratio: at d_model 128,
  passing the call on to Tracer.record with keyword arguments (which Python 3.11 does not
  specialise) cost about 0.04 of an untraced forward.
- StepRecord is a frozen dataclass with slots. The tracer fills each record as an
  instance of a class with the same slots and no frozen __setattr__, then assigns its
  __class__. Counted with valgrind's callgrind (instructions, steady on a loaded machine):
  about 2,200 instructions per record, against 8,700 for the frozen __init__ (one
  object.__setattr__ per field), 4,400 for object.__new__ plus the slots' member
  descriptors and 900 for the named tuple it was for a while; a traced forward of part 1
  then costs 1.145x the untraced one's instructions, against 1.142x with the named tuple.
"""

from __future__ import annotations

import argparse
import math
import os
import statistics
import sys
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from glassllm import Config, GlassLM, Tracer  # noqa: E402
from glassllm.checkpoint import config_to_hf  # noqa: E402


def blocked_medians(fns: dict, rounds: int, block: int, clock=time.perf_counter) -> dict:
    """Median seconds per call, each contender timed alone for ``block`` calls per round.

    The first call of each block is a warm-up and is not kept, so the other side's spinning
    threads from the previous block have stopped before anything is measured. ``clock``:
    wall time by default; ``time.process_time`` counts only this process's CPU time.
    """
    samples = {name: [] for name in fns}
    for round_index in range(rounds):
        order = list(fns) if round_index % 2 == 0 else list(fns)[::-1]
        for name in order:
            fns[name]()
            for _ in range(block):
                start = clock()
                fns[name]()
                samples[name].append(clock() - start)
    return {name: statistics.median(values) for name, values in samples.items()}


def report(label: str, ours: float, theirs: float, target: float, names=("A", "B")) -> bool:
    ratio = ours / theirs
    ok = ratio <= target
    print(f"{label}: {names[0]} {ours * 1e3:8.3f} ms   {names[1]} {theirs * 1e3:8.3f} ms   "
          f"ratio {ratio:6.3f}x   target <= {target:.3f}x   {'ok' if ok else 'MISSED'}")
    return ok


def bench_tracing(rounds: int, block: int) -> bool:
    model = GlassLM(Config(vocab_size=256, d_model=128, n_layers=4, n_heads=4, n_kv_heads=2,
                           max_len=64))
    tokens = np.random.default_rng(0).integers(0, 256, 64)
    probe = Tracer()
    model.forward(tokens, probe)
    snapshots = [r.value for r in probe.records]
    copies = [np.empty_like(value) for value in snapshots]

    def floor():
        model.forward(tokens)
        for copy, value in zip(copies, snapshots):
            np.copyto(copy, value)

    # a forward here takes a few ms and the target is a difference of 0.10x, so this part
    # runs 10x the rounds of the others (a few seconds): noise here is a few hundredths
    times = blocked_medians({"traced": lambda: model.forward(tokens, Tracer()),
                             "floor": floor, "untraced": lambda: model.forward(tokens)},
                            10 * rounds, block)
    untraced = times["untraced"]
    floor_ratio = times["floor"] / untraced
    print(f"floor (untraced + bare copy of the {sum(v.nbytes for v in snapshots) / 1e6:.1f} MB "
          f"of {len(snapshots)} snapshots): {times['floor'] * 1e3:8.3f} ms   "
          f"ratio {floor_ratio:6.3f}x")
    return report("traced vs untraced forward (d128, L4, n64)", times["traced"], untraced,
                  floor_ratio + 0.10, ("traced", "untraced"))


def bench_against_hugging_face(rounds: int, block: int, smollm: bool, threads: int) -> bool:
    try:
        import torch
        from transformers import LlamaConfig, LlamaForCausalLM
    except ImportError as error:
        print(f"skipped glassllm vs Hugging Face: {error} (pip install torch==2.13.0 transformers)")
        return True
    ok = True
    cases = [
        ("d64, L2, n16", dict(vocab_size=256, d_model=64, n_layers=2, n_heads=4, n_kv_heads=2,
                              max_len=16)),
        ("d288, L6, H6, V32000, n64", dict(vocab_size=32000, d_model=288, n_layers=6, n_heads=6,
                                           n_kv_heads=6, max_len=64)),
    ]
    # equal thread counts: PyTorch's pool and NumPy's BLAS get the same number of cores
    torch.set_num_threads(threads)
    set_blas_threads(threads)
    if smollm:
        cases.append(("SmolLM-135M shape, n64", dict(
            vocab_size=49152, d_model=576, n_layers=30, n_heads=9, n_kv_heads=3, d_ff=1536,
            max_len=64, tie_word_embeddings=True)))
    print(f"torch {torch.__version__}, {torch.get_num_threads()} threads; numpy "
          f"{np.__version__}, BLAS threads {blas_threads()}; blocked rounds of {block} calls")
    for label, fields in cases:
        model = GlassLM(Config(**fields))
        c = model.config
        twins = {}
        for attention in ("sdpa", "eager"):
            twin = LlamaForCausalLM(LlamaConfig(**config_to_hf(c),
                                                attn_implementation=attention)).eval()
            twin.load_state_dict({k: torch.from_numpy(v) for k, v in model.state_dict().items()},
                                 strict=not c.tie_word_embeddings)
            twins[attention] = twin
        tokens = np.random.default_rng(0).integers(0, c.vocab_size, c.max_len)
        batch = torch.tensor(tokens[None])

        def hugging_face(twin):
            def call():
                with torch.inference_mode():
                    twin(batch, use_cache=False)
            return call

        contenders = {"glassllm": lambda: model.forward(tokens),
                      "sdpa": hugging_face(twins["sdpa"]), "eager": hugging_face(twins["eager"])}
        if c.n_layers == 30:  # the SmolLM shape: also one traced step in every layer
            contenders["one step"] = lambda: model.forward(tokens, Tracer(steps="attn.softmax"))
        times = blocked_medians(contenders, rounds, block)
        for attention in ("sdpa", "eager"):
            ok &= report(f"glassllm vs HF Llama {attention} ({label})", times["glassllm"],
                         times[attention], 1.0, ("glassllm", "HF"))
        if "one step" in times:
            ok &= report(f"traced attn.softmax only vs untraced ({label})", times["one step"],
                         times["glassllm"], 1.05, ("traced", "untraced"))
    return ok

GENERATION_CASES = [
    ("d288, L6, H6, V32000, +64 tokens", 64, dict(
        vocab_size=32000, d_model=288, n_layers=6, n_heads=6, n_kv_heads=6, max_len=128)),
    ("SmolLM-135M shape, +24 tokens", 24, dict(
        vocab_size=49152, d_model=576, n_layers=30, n_heads=9, n_kv_heads=3, d_ff=1536,
        max_len=64, tie_word_embeddings=True)),
]
PROMPT = 32  # tokens of the generation benchmark's prompt


def bench_generation(rounds: int, block: int, smollm: bool, threads: int) -> bool:
    try:
        import torch
        from transformers import GenerationConfig, LlamaConfig, LlamaForCausalLM
        from transformers.utils import logging
    except ImportError as error:
        print(f"skipped generation vs Hugging Face: {error} (pip install torch==2.13.0 "
              f"transformers)")
        return True
    logging.set_verbosity_error()  # generate() warns about settings we pass on purpose
    torch.set_num_threads(threads)
    set_blas_threads(threads)
    ok = True
    for label, new, fields in GENERATION_CASES if smollm else GENERATION_CASES[:1]:
        model = GlassLM(Config(**fields))
        c = model.config
        twin = LlamaForCausalLM(LlamaConfig(**config_to_hf(c), attn_implementation="sdpa")).eval()
        twin.load_state_dict({k: torch.from_numpy(v) for k, v in model.state_dict().items()},
                             strict=not c.tie_word_embeddings)
        twin.generation_config.eos_token_id = None  # exactly `new` tokens: none ends the text
        prompt = np.random.default_rng(0).integers(0, c.vocab_size, PROMPT)
        batch = torch.tensor(prompt[None])
        settings = GenerationConfig(max_new_tokens=new, do_sample=False, pad_token_id=0)

        def hugging_face() -> list[int]:
            with torch.inference_mode():
                return twin.generate(batch, generation_config=settings)[0, PROMPT:].tolist()

        def glassllm() -> list[int]:
            return [step.token for step in model.generate(prompt, new, greedy=True)]

        same = glassllm() == hugging_face()
        print(f"greedy tokens ({label}): {'identical' if same else 'DIFFERENT'} to Hugging Face")
        ok &= same
        times = blocked_medians({"glassllm": glassllm, "HF": hugging_face},
                                max(2, rounds // 2), max(2, block // 2))
        ok &= report(f"generation vs HF generate() ({label})", times["glassllm"], times["HF"],
                     1.0, ("glassllm", "HF"))
        # the bandwidth measured right before and after the tokens, under the same load
        bandwidth = memory_bandwidth()
        per_token = statistics.median(
            statistics.median(token_seconds(model, prompt, new)[1:]) for _ in range(3))
        bandwidth = max(bandwidth, memory_bandwidth())
        floor = weight_bytes_per_token(model) / bandwidth
        print(f"  one cached token: {per_token * 1e3:.3f} ms; floor {floor * 1e3:.3f} ms = "
              f"{weight_bytes_per_token(model) / 1e6:.1f} MB of weights read once at "
              f"{bandwidth / 1e9:.1f} GB/s (np.copyto of 256 MB, bytes read + written) -> "
              f"{per_token / floor:.2f}x the floor")
    return ok


def bench_flat_cost(threads: int) -> bool:
    set_blas_threads(threads)
    ok = True
    for label, fields in (("d128, L4", dict(vocab_size=256, d_model=128, n_layers=4, n_heads=4,
                                             n_kv_heads=2, max_len=256)),
                          ("d288, L6", dict(vocab_size=32000, d_model=288, n_layers=6,
                                            n_heads=6, n_kv_heads=6, max_len=256))):
        model = GlassLM(Config(**fields))
        prompt = np.random.default_rng(1).integers(0, model.config.vocab_size, 8)
        runs = [token_seconds(model, prompt, 200) for _ in range(5)]
        per_index = [statistics.median(run[i] for run in runs) for i in range(200)]
        early = statistics.median(per_index[10:60])
        late = statistics.median(per_index[150:200])
        ok &= report(f"cost per token, tokens 150-200 vs 10-60 ({label}, cached)", late, early,
                     1.5, ("late", "early"))
    return ok


def token_seconds(model: GlassLM, prompt, n: int) -> list[float]:
    """Seconds each generated token took (the first includes the prompt's pass)."""
    seconds, steps = [], model.generate(prompt, n, greedy=True)
    start = time.perf_counter()
    for _ in steps:
        now = time.perf_counter()
        seconds.append(now - start)
        start = now
    return seconds


def weight_bytes_per_token(model: GlassLM) -> int:
    """The bytes of the weights one cached token reads: all of them once, except the
    embedding table, of which it reads one row (unless the output layer is that table)."""
    state = model.state_dict()
    total = sum(value.nbytes for value in state.values())
    if not model.config.tie_word_embeddings:
        embed = state["model.embed_tokens.weight"]
        total -= embed.nbytes - embed[0].nbytes
    return total


def memory_bandwidth(nbytes: int = 2**27) -> float:
    """Bytes per second read and written by np.copyto between two arrays far larger than
    the caches (best of 5)."""
    source = np.ones(nbytes // 4, dtype=np.float32)
    target = np.zeros_like(source)
    best = math.inf
    for _ in range(5):
        start = time.perf_counter()
        np.copyto(target, source)
        best = min(best, time.perf_counter() - start)
    return 2 * nbytes / best


def set_blas_threads(n: int) -> None:
    try:
        from threadpoolctl import threadpool_limits
    except ImportError:
        return  # NumPy's OpenBLAS then uses its default, one thread per core
    threadpool_limits(n, user_api="blas")


def blas_threads() -> str:
    try:
        from threadpoolctl import threadpool_info
    except ImportError:
        return "unknown (pip install threadpoolctl)"
    return ", ".join(f"{i['internal_api']} {i['num_threads']}" for i in threadpool_info()) or "none"


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description="glassllm engine benchmark")
    parser.add_argument("--rounds", type=int, default=6, help="alternating rounds (default 6)")
    parser.add_argument("--block", type=int, default=5, help="timed calls per side per round")
    parser.add_argument("--threads", type=int, default=os.cpu_count() or 1,
                        help="threads for both NumPy's BLAS and PyTorch (default: every core)")
    parser.add_argument("--no-smollm", action="store_true",
                        help="skip the SmolLM-135M shape (a few minutes and 2 GB)")
    parser.add_argument("--only", choices=("forward", "generation"),
                        help="run parts 1-3 (forward) or 4-5 (generation) only")
    args = parser.parse_args(argv)
    if hasattr(os, "getloadavg"):
        print("load average %.2f %.2f %.2f on %d cores" % (*os.getloadavg(), os.cpu_count()))
    set_blas_threads(args.threads)
    ok = True
    if args.only != "generation":
        ok &= bench_tracing(args.rounds, args.block)
        ok &= bench_against_hugging_face(args.rounds, args.block, not args.no_smollm,
                                         args.threads)
    if args.only != "forward":
        ok &= bench_generation(args.rounds, args.block, not args.no_smollm, args.threads)
        ok &= bench_flat_cost(args.threads)
    return finish(ok)


def finish(ok: bool) -> int:
    """The last lines of a benchmark: the load at its end and whether every target was met."""
    if hasattr(os, "getloadavg"):
        print("load average %.2f %.2f %.2f at the end" % os.getloadavg())
    print("all targets met" if ok else "some targets missed")
    return 0


if __name__ == "__main__":
    sys.exit(main())
