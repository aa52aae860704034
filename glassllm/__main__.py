"""Command line: ``python -m glassllm record "some text" --tokens 8 --out run.glrec``.

``--model DIR`` runs a Hugging Face Llama checkpoint folder instead of random weights; text
is encoded with its ``tokenizer.json`` when it has one (the recording then stores how each
token reads), else as UTF-8 bytes. The file is read by ``glassllm.load_tokenizer``, as the
site reads it; one that reader cannot reproduce (not byte-level BPE) by the ``tokenizers``
package, when installed.

Writes a recording (see ``glassllm.recording``) that the site's replay page opens with
"Open your own run". A generation is recorded as ``generate`` runs it, with the KV cache:
the first step is a pass over the prompt, every later step computes one new position
against the cached keys; ``--no-cache`` records the full recompute instead (a forward pass
over the whole sequence at every step: a bigger file). Binary (version 2) for ``--out
*.glrec``, the default, with floats as
``--dtype`` (float32, or float16 for half the size), or version 1 JSON for ``*.json``. The
sizes of the recording and of the weights are estimated from the shapes before anything
runs, and the recording's estimate is printed; a run where either would pass ``--max-size``
megabytes is refused, and so, whatever ``--max-size`` says, is one that this machine's
memory or free disk cannot hold or that a recording cannot represent (sizes beyond int32,
numbers of more than 64 digits). Exit status: 0 written, 2 bad input or refused (one line
on stderr, names escaped, nothing written), 1 the write itself failed, 130 on Ctrl-C, 143
on SIGTERM and 129 on SIGHUP (nothing left behind, not even the temp file; a second
signal does not cut that short).
"""

from __future__ import annotations

import argparse
import math
import os
import re
import shutil
import signal
import sys
import threading
import time
from contextlib import contextmanager, nullcontext
from pathlib import Path
from typing import Iterator

from .text.bpe import ByteTokenizer, UnsupportedTokenizer, load_tokenizer
from .files.checkpoint import CONFIG_NAME, read_config
from .config import Config, parameter_count
from .text.hf_tokenizer import TOKENIZER_NAME, CheckpointTokenizer
from .model import GlassLM, physical_memory
from .interpret.recording import (BINARY_SUFFIX, FLOAT_DTYPES, MAX_NUMBER_CHARS, MAX_SIZE,
                                  estimate_size, record_generation, record_loss, record_training,
                                  recording_format, write_recording)
from .text.tokenizer import BYTE_VOCAB_SIZE, encode
from .trace import Tracer

PROG = "python -m glassllm record"
DEFAULT_MAX_MB = 100.0
# From this estimated size on, a run takes seconds to minutes: say on stderr what it does
PROGRESS_FROM_BYTES = 20_000_000


def _int_at_least(minimum: int):
    """An argparse type: a whole number >= minimum, of at most MAX_NUMBER_CHARS digits (the
    longest number a recording holds: its readers refuse longer ones)."""
    def parse(text: str) -> int:
        digits = text.strip().lstrip("+-")
        if len(digits) > MAX_NUMBER_CHARS:
            raise argparse.ArgumentTypeError(f"expected at most {MAX_NUMBER_CHARS} digits, "
                                             f"got {len(digits):,}")
        try:
            value = int(text)
        except ValueError:
            raise argparse.ArgumentTypeError(f"expected a whole number, got {text!r}") from None
        if value < minimum:
            raise argparse.ArgumentTypeError(f"expected {minimum} or more, got {value}")
        return value
    return parse


_positive_int = _int_at_least(1)
_non_negative_int = _int_at_least(0)


def _positive_float(text: str) -> float:
    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected a number, got {text!r}") from None
    if not value > 0 or value == float("inf"):
        raise argparse.ArgumentTypeError(f"expected a finite number above 0, got {text}")
    return value


class _Parser(argparse.ArgumentParser):
    """argparse, with its errors on one line (no usage block) and names in them escaped."""

    def error(self, message: str):
        self.exit(2, f"{self.prog}: error: {_printable(message)}; see {self.prog} --help\n")

    def parse_args(self, args=None, namespace=None):
        # argparse reports a command's unknown option from the top parser, whose --help
        # does not list it: the command's own parser says it, pointing at its own --help
        parsed, unknown = self.parse_known_args(args, namespace)
        if unknown:
            commands = next((action.choices for action in self._actions
                             if isinstance(action, argparse._SubParsersAction)), {})
            owner = commands.get(getattr(parsed, "command", None), self)
            owner.error(f"unrecognized arguments: {' '.join(unknown)}")
        return parsed


def build_parser() -> argparse.ArgumentParser:
    parser = _Parser(
        prog="python -m glassllm",
        description="glassllm: a glass-box Llama-style language model in NumPy.")
    commands = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")
    rec = commands.add_parser(
        "record", help="record a traced run for the replay page",
        description="Run the model on TEXT with the tracer on and write every snapshot, in "
                    "recorded order, as a recording. Open it on the site's replay page "
                    "with 'Open your own run'. Without --model the weights are random for "
                    "the seed (the model is not trained), so the generated text is "
                    "gibberish; the point is to watch every step.")
    rec.add_argument("text", help="the prompt (generation) or the text to score (--loss) or "
                                  "train on (--train); "
                                  "each UTF-8 byte is one token, unless --model DIR has a "
                                  "tokenizer.json")
    rec.add_argument("--tokens", type=_positive_int, default=8, metavar="N",
                     help="how many tokens to generate (default 8)")
    rec.add_argument("--out", type=Path, default=Path("run" + BINARY_SUFFIX), metavar="PATH",
                     help=f"where to write the recording (default run{BINARY_SUFFIX}): "
                          f"*{BINARY_SUFFIX} is the compact binary format the replay opens "
                          f"fast, *.json the version 1 JSON format, for small runs")
    rec.add_argument("--dtype", choices=FLOAT_DTYPES, default="float32",
                     help="how a binary recording stores its float values: float32 (the "
                          "default, exact) or float16 (half the size, about 3 significant "
                          "digits; ±inf and NaN kept, values beyond ±65504 refused)")
    rec.add_argument("--no-cache", dest="cache", action="store_false",
                     help="record the full recompute: every generation step runs the whole "
                          "sequence again, so each step's snapshots cover every position "
                          "(a bigger recording); by default generation uses the KV cache and "
                          "every step after the first computes only its new position")
    rec.add_argument("--loss", action="store_true",
                     help="record the loss of TEXT predicting itself shifted by one token "
                          "instead of a generation")
    rec.add_argument("--train", action="store_true",
                     help="record one training step on TEXT predicting itself shifted by one "
                          "token: the forward and the loss, the gradient of every value in "
                          "reverse order, then the AdamW update (the recipe of 'python -m "
                          "glassllm train': lr 3e-3, betas 0.9 and 0.95, weight decay 0.1 on "
                          "the matrices) with sampled weights of every parameter before and "
                          "after")
    rec.add_argument("--max-size", type=_positive_float, default=DEFAULT_MAX_MB, metavar="MB",
                     help="refuse a run whose recording, or whose model weights, would "
                          f"take more than MB megabytes (default {DEFAULT_MAX_MB:g}); a "
                          "recording grows with the text's length squared, with --tokens "
                          "(with --no-cache as the square of the sequence's length) and with "
                          "the model's width")
    rec.add_argument("--model", type=Path, default=None, metavar="DIR",
                     help="a Hugging Face LlamaForCausalLM folder (config.json, "
                          "model.safetensors, optionally tokenizer.json) instead of random "
                          "weights; the model size options then come from DIR")
    model = rec.add_argument_group("model size (random weights, without --model)")
    # None: not given. The defaults are filled in only for a random model, so that --model
    # can tell a size the user typed (a contradiction) from a default
    model.add_argument("--layers", type=_positive_int, default=None, help="blocks (default 2)")
    model.add_argument("--d-model", type=_positive_int, default=None,
                       help="model width (default 64)")
    model.add_argument("--heads", type=_positive_int, default=None,
                       help="query heads (default 4)")
    model.add_argument("--kv-heads", type=_positive_int, default=None,
                       help="key/value heads, must divide --heads (default 2)")
    model.add_argument("--d-ff", type=_positive_int, default=None,
                       help="MLP width (default: Llama's 8/3 of --d-model)")
    model.add_argument("--max-len", type=_positive_int, default=None,
                       help="context length (default: 64, or longer if the run needs it)")
    model.add_argument("--seed", type=_non_negative_int, default=None,
                       help="seed of the random weights (default 0)")
    trace = rec.add_argument_group(
        "trace filters", "the filters of glassllm.Tracer(steps=, layers=, heads=), as "
                         "comma-separated lists. Recordings hold whole "
                         "runs, so they are checked and then refused, with the way to use "
                         "them from Python.")
    trace.add_argument("--trace-steps", default=None, metavar="ID,...",
                       help="step IDs, e.g. attn.softmax,logits")
    trace.add_argument("--trace-layers", default=None, metavar="N,...", help="blocks")
    trace.add_argument("--trace-heads", default=None, metavar="H,...", help="query heads")
    sampling = rec.add_argument_group("sampling")
    sampling.add_argument("--greedy", action="store_true",
                          help="always take the most likely token")
    sampling.add_argument("--temperature", type=_positive_float, default=None,
                          help="divide the logits by this before softmax (default 1.0)")
    sampling.add_argument("--top-k", type=_positive_int, default=None,
                          help="sample only among the K most likely tokens")
    sampling.add_argument("--sample-seed", type=_non_negative_int, default=0,
                          help="seed of the sampler (default 0)")
    # errors about option combinations are reported by the subcommand's own parser
    rec.set_defaults(run=_record, command_parser=rec,
                     stopped=lambda args: f"{_shown(args.out)} was not written")
    _add_train_command(commands)
    return parser


# Config's error messages name its fields; the reader typed the options
_OPTION_OF_FIELD = {"Config.d_model": "--d-model", "Config.n_layers": "--layers",
                    "Config.n_heads": "--heads", "Config.n_kv_heads": "--kv-heads",
                    "Config.d_ff": "--d-ff", "Config.max_len": "--max-len",
                    "Config.seed": "--seed"}


def _option_names(message: str) -> str:
    for field_name, option in _OPTION_OF_FIELD.items():
        message = message.replace(field_name, option)
    return message


def _shown(path: Path) -> str:
    """A path as one line of printable text: bytes that are not UTF-8 as \\xNN, control
    characters (a newline, an escape) as Python writes them in a string."""
    return _printable(os.fsencode(path).decode("utf-8", "backslashreplace"))


def _printable(text: str) -> str:
    """``text`` with every character that is not printable escaped (\\n, \\x1b, \\u2028):
    a message stays one line, and a file name cannot drive the terminal."""
    if text.isprintable():
        return text
    return "".join(c if c.isprintable() else c.encode("unicode_escape").decode("ascii")
                   for c in text)


def _megabytes(size: int) -> str:
    mb = size / 1e6
    if mb >= 1e7:  # a run that cannot be made: the order of magnitude says enough
        return f"{mb:.2g} MB"
    return f"{mb:.1f} MB" if mb < 10 else f"{mb:,.0f} MB"


# Config's sizes, with the option (random model) or config.json key (--model) that sets them
_SIZE_NAMES = {"vocab_size": ("the vocabulary", "vocab_size"),
               "d_model": ("--d-model", "hidden_size"), "n_layers": ("--layers", "num_hidden_layers"),
               "n_heads": ("--heads", "num_attention_heads"),
               "n_kv_heads": ("--kv-heads", "num_key_value_heads"),
               "d_ff": ("--d-ff", "intermediate_size"),
               "max_len": ("--max-len", "max_position_embeddings")}


def _free_space(folder: Path) -> int | None:
    try:
        return shutil.disk_usage(folder).free
    except OSError:
        return None


def _check_out(out: Path, dtype: str, fail) -> None:
    """Refuse an --out that cannot be written before spending minutes on the run."""
    try:
        if not out.parent.is_dir():
            fail(f"--out {_shown(out)}: the folder {_shown(out.parent)} does not exist; "
                 f"create it first")
        name_max = os.pathconf(out.parent, "PC_NAME_MAX")
        name_bytes = len(os.fsencode(out.name))
        if name_bytes > name_max:
            fail(f"--out: the file name is {name_bytes} bytes long, but this file system "
                 f"allows at most {name_max}; choose a shorter name")
        if out.is_dir():
            fail(f"--out {_shown(out)} is a folder; give a file name such as "
                 f"{_shown(out / 'run.json')}")
    except OSError as err:  # e.g. a path longer than the system allows
        fail(f"--out {_shown(out)}: {err.strerror}")
    if not os.access(out.parent, os.W_OK):
        fail(f"--out {_shown(out)}: the folder {_shown(out.parent)} is not writable")
    try:
        binary = recording_format(out) == "binary"
    except ValueError:
        fail(f"--out {_shown(out)}: name the file *{BINARY_SUFFIX} (compact binary, opens fast "
             f"in the replay) or *.json (version 1 JSON, for small runs)")
    if dtype != "float32" and not binary:
        fail(f"--dtype {dtype} needs the binary format; name the --out file *{BINARY_SUFFIX}")


def _model_tokenizer(folder):
    """The folder's tokenizer.json read by glassllm's own reader (as the site reads it), or,
    for one that reader cannot reproduce, by the tokenizers package when it is installed;
    None without tokenizer.json (the text is then read as bytes)."""
    try:
        tokenizer = load_tokenizer(folder)
    except UnsupportedTokenizer as own:
        try:
            return CheckpointTokenizer.from_folder(folder)
        except ValueError as err:
            raise ValueError(f"{own}; and {err}") from None
    return None if isinstance(tokenizer, ByteTokenizer) else tokenizer


def _encode_text(text: str, fail, tokenizer: CheckpointTokenizer | None = None) -> list[int]:
    try:
        tokens = encode(text)  # the UTF-8 check, with a tokenizer too
    except UnicodeEncodeError as err:
        # Python hands over argument bytes that are not UTF-8 as U+DC80..U+DCFF
        char = text[err.start]
        position = len(text[:err.start].encode("utf-8"))
        what = (f"byte 0x{ord(char) - 0xDC00:02x}" if "\udc80" <= char <= "\udcff"
                else f"U+{ord(char):04X}")
        fail(f"TEXT is not valid UTF-8 ({what} at position {position}); give the text in "
             f"UTF-8" + ("" if tokenizer else ", where each byte is one token"))
    if tokenizer is None:
        return tokens
    tokens = tokenizer.encode(text)
    if not tokens:
        fail(f"TEXT encodes to no tokens with {tokenizer.source}; give a longer text")
    return tokens


class _Progress:
    """Progress lines on stderr, only for long runs; on a terminal an ongoing line is
    overwritten by the next one."""

    def __init__(self, enabled: bool) -> None:
        self.enabled, self.tty = enabled, sys.stderr.isatty()
        self.shown_at, self.width = -math.inf, 0

    def line(self, text: str, ongoing: bool = False) -> None:
        now = time.monotonic()
        if not self.enabled or (ongoing and now - self.shown_at < 0.5):
            return
        self.shown_at = now
        end = "\r" if ongoing and self.tty else "\n"
        print(f"{PROG}: {text}".ljust(self.width), end=end, file=sys.stderr, flush=True)
        self.width = len(text) + len(PROG) + 2 if end == "\r" else 0


# The model-size options and their defaults for a random model
_RANDOM_MODEL = {"layers": ("--layers", 2), "d_model": ("--d-model", 64),
                 "heads": ("--heads", 4), "kv_heads": ("--kv-heads", 2),
                 "d_ff": ("--d-ff", None), "max_len": ("--max-len", None),
                 "seed": ("--seed", 0)}


def _checkpoint_config(folder: Path, fail) -> Config:
    """The Config of a checkpoint folder, read before its weights so that the size limit
    can refuse a model without loading it."""
    if not folder.is_dir():
        fail(f"--model {_shown(folder)} is not a folder; give a Hugging Face model folder "
             f"holding {CONFIG_NAME} and model.safetensors")
    try:
        return read_config(folder)
    except ValueError as err:
        fail(f"--model: {err}")


def _trace_filters(args, config: Config, fail) -> None:
    """Check --trace-steps/--trace-layers/--trace-heads as Tracer and the model would, then
    refuse them: a recording (format version 1) holds every event of a run."""
    given = {option: text for option, text in (("--trace-steps", args.trace_steps),
                                               ("--trace-layers", args.trace_layers),
                                               ("--trace-heads", args.trace_heads))
             if text is not None}
    if not given:
        return
    values = {}
    for option, text in given.items():
        items = [item.strip() for item in text.split(",") if item.strip()]
        if option != "--trace-steps":
            try:
                items = [int(item) for item in items]
            except ValueError:
                fail(f"{option} takes comma-separated whole numbers, got {text!r}")
        values[option] = items
    try:
        tracer = Tracer(steps=values.get("--trace-steps"), layers=values.get("--trace-layers"),
                        heads=values.get("--trace-heads"))
    except (KeyError, ValueError) as err:
        message = err.args[0] if isinstance(err, KeyError) else str(err)
        fail(f"{', '.join(given)}: {message}")
    for asked, count, what in ((tracer.layers, config.n_layers, "layers"),
                               (tracer.heads, config.n_heads, "heads")):
        if asked and max(asked) >= count:
            fail(f"--trace-{what} asks for {what} {sorted(asked)}, but the model has {count} "
                 f"{what} (0..{count - 1})")
    python = ", ".join(f"{option[8:]}={values[option]!r}" for option in given)
    fail(f"{', '.join(given)}: a recording holds every event of a run (the replay checks "
         f"each one), so it cannot be filtered yet; to trace only part of a run, use "
         f"glassllm.Tracer({python}) from Python")


def _record(args, parser: argparse.ArgumentParser) -> int:
    def fail(message: str):
        # one line, without argparse's usage block: the message says what to change
        parser.exit(2, f"{parser.prog}: error: {_printable(message)}\n")

    if not args.text:
        fail("TEXT is empty; give at least one character")
    if args.greedy and args.temperature is not None:
        fail("--temperature has no effect with --greedy; drop one of them")
    if args.loss and args.train:
        fail("--loss records the loss, --train a training step (its loss included); give one")
    scored = args.loss or args.train  # TEXT predicting itself, no generation
    flag = "--train" if args.train else "--loss"
    if scored and (args.greedy or args.temperature is not None or args.top_k is not None
                   or not args.cache):
        fail(f"--greedy, --temperature, --top-k and --no-cache choose how to generate; a "
             f"{flag} recording does not generate, so drop them")
    out = args.out
    _check_out(out, args.dtype, fail)
    tokenizer = None
    if args.model is not None:
        typed = [option for name, (option, _) in _RANDOM_MODEL.items()
                 if getattr(args, name) is not None]
        if typed:
            fail(f"{', '.join(typed)} set{'s' if len(typed) == 1 else ''} the size of a random "
                 f"model, but --model brings its own ({CONFIG_NAME}); drop "
                 f"{'it' if len(typed) == 1 else 'them'}")
        config = _checkpoint_config(args.model, fail)
        try:
            tokenizer = _model_tokenizer(args.model)
        except ValueError as err:
            fail(f"--model: {err}")
        if tokenizer is None and config.vocab_size != BYTE_VOCAB_SIZE:
            fail(f"--model {_shown(args.model)} has no {TOKENIZER_NAME}, so TEXT would be read "
                 f"as bytes, which needs a vocabulary of {BYTE_VOCAB_SIZE}; this model has "
                 f"{config.vocab_size} tokens: add the model's {TOKENIZER_NAME} to the folder")
        tokens = _encode_text(args.text, fail, tokenizer)
    else:
        for name, (_, default) in _RANDOM_MODEL.items():
            if getattr(args, name) is None:
                setattr(args, name, default)
        tokens = _encode_text(args.text, fail)
    needed = len(tokens) if scored else len(tokens) + args.tokens
    if needed > MAX_SIZE:
        fail(f"the run needs {needed:,} positions, but a recording holds runs of at most "
             f"{MAX_SIZE:,} (its sizes are int32); "
             + ("shorten the text" if scored else "lower --tokens or shorten the text"))
    if args.model is None:
        max_len = args.max_len if args.max_len is not None else max(64, needed)
        if needed > max_len:
            fail(f"the run needs {needed} positions but --max-len is {max_len}; raise "
                 f"--max-len or shorten the text" + ("" if scored else " or lower --tokens"))
        try:
            config = Config(vocab_size=BYTE_VOCAB_SIZE, d_model=args.d_model,
                            n_layers=args.layers, n_heads=args.heads,
                            n_kv_heads=args.kv_heads, max_len=max_len, d_ff=args.d_ff,
                            seed=args.seed)
        except ValueError as err:
            fail(_option_names(str(err)))
    elif needed > config.max_len:
        fail(f"the run needs {needed} positions but the model reads at most {config.max_len} "
             f"(max_position_embeddings); shorten the text"
             + ("" if scored else " or lower --tokens"))
    for name, (option, key) in _SIZE_NAMES.items():
        if getattr(config, name) > MAX_SIZE:
            what = option if args.model is None else f"the model's {key} ({CONFIG_NAME})"
            fail(f"{what} is {getattr(config, name):,}, but a recording holds models of sizes "
                 f"up to {MAX_SIZE:,} (int32)")
    if args.top_k is not None and args.top_k > config.vocab_size:
        what = "the byte vocabulary" if tokenizer is None else "the model's vocabulary"
        fail(f"--top-k must be at most {config.vocab_size} ({what}), got {args.top_k}")
    _trace_filters(args, config, fail)
    # refused from the shapes alone, before the weights exist or a pass runs: first what no
    # limit lifts (this machine's memory and disk), then what --max-size does
    parameters = parameter_count(config)
    binary = recording_format(out) == "binary"
    size_of = {"binary": binary, "dtype": args.dtype, "cache": args.cache}
    kind, shape = ((("training" if args.train else "loss"), (len(tokens) - 1,)) if scored
                   else ("generation", (len(tokens), args.tokens)))
    estimate = estimate_size(config, kind, *shape, **size_of)
    smaller = ("shorten the text" if scored else "lower --tokens, shorten the text") + (
        " or shrink the model" if args.model is None else "")
    # in memory at once: the weights, every snapshot (float32), then the file's bytes
    # (a JSON file twice: its base64 arrays, then the text)
    needs = (parameters * 4 + estimate_size(config, kind, *shape, binary=True, cache=args.cache)
             + estimate * (1 if binary else 2))
    memory = physical_memory()
    shrink = "; lower --d-model, --d-ff or --layers" if args.model is None else ""
    if memory is not None and parameters * 4 > memory:
        fail(f"the model's weights would take about {_megabytes(parameters * 4)} "
             f"({parameters:,} parameters), more than this machine's {_megabytes(memory)} "
             f"of memory{shrink}")
    if memory is not None and needs > memory:
        fail(f"this run would need about {_megabytes(needs)} of memory (a recording is built "
             f"in memory before it is written), more than this machine's "
             f"{_megabytes(memory)}; {smaller}")
    free = _free_space(out.parent)
    if free is not None and estimate > free:
        fail(f"this recording would be about {_megabytes(estimate)}, more than the "
             f"{_megabytes(free)} free in {_shown(out.parent.resolve())}; {smaller}")
    if parameters * 4 > args.max_size * 1e6:
        fail(f"the model's weights would take about {_megabytes(parameters * 4)} "
             f"({parameters:,} parameters), above the {args.max_size:g} MB limit"
             + (shrink + "," if shrink else ";")
             + f" lift the limit with --max-size {math.ceil(parameters * 4 * 1.05 / 1e6)}")
    if estimate > args.max_size * 1e6:
        fail(f"this recording would be about {_megabytes(estimate)}, above the "
             f"{args.max_size:g} MB limit; {smaller}"
             + (", halve it with --dtype float16" if binary and args.dtype == "float32"
                else "")
             + f", or lift the limit with --max-size {math.ceil(estimate * 1.05 / 1e6)}")
    layout = f"binary, {args.dtype}" if binary else "JSON"
    print(f"recording {_shown(out)}: about {_megabytes(estimate)} ({layout})", flush=True)
    progress = _Progress(estimate >= PROGRESS_FROM_BYTES)
    try:
        if args.model is None:
            model = GlassLM(config)
        else:
            progress.line(f"loading {_shown(args.model)}...")
            try:
                model = GlassLM.from_pretrained(args.model)
            except ValueError as err:
                fail(f"--model: {err}")
        if args.train:
            progress.line(f"one training step over {len(tokens) - 1} positions...")
            from .learning.train import Trainer, TrainOptions

            # the recipe of python -m glassllm train: its AdamW, at the full rate of step 1
            rec = record_training(model, tokens, Trainer(model, TrainOptions()).optimizer,
                                  tokenizer=tokenizer)
        elif scored:
            progress.line(f"tracing the loss over {len(tokens) - 1} positions...")
            rec = record_loss(model, tokens, tokenizer=tokenizer)
        else:
            rec = record_generation(
                model, tokens, args.tokens, greedy=args.greedy,
                temperature=1.0 if args.temperature is None else args.temperature,
                top_k=args.top_k, seed=args.sample_seed, tokenizer=tokenizer, cache=args.cache,
                on_step=lambda done: progress.line(f"generation step {done}/{args.tokens}",
                                                   ongoing=done < args.tokens))
    except ValueError as err:
        fail(_option_names(str(err)))
    progress.line(f"writing {_shown(out)} (about {_megabytes(estimate)})...")
    try:
        size = write_recording(rec, out, dtype=args.dtype)
    except ValueError as err:  # float16 cannot hold a value of this run: nothing written
        fail(str(err))
    except OSError as err:
        print(f"{PROG}: error: cannot write {_shown(out)}: {err.strerror}", file=sys.stderr)
        return 1
    if rec.kind == "generation":
        what = (f"generation of {len(rec.generated)} token(s) after a "
                f"{len(rec.prompt)}-token prompt, "
                + ("with the KV cache" if rec.cache else "recomputed in full at every step"))
    elif rec.kind == "training":
        what = (f"training step over {len(rec.prompt)} position(s), loss {rec.loss:.4f} → "
                f"{rec.update['loss_after']:.4f} after the AdamW update")
    else:
        what = f"loss over {len(rec.prompt)} position(s), loss = {rec.loss:.4f}"
    print(f"wrote {_shown(out)}: {what}, {len(rec.events)} events, {size / 1e6:.2f} MB. "
          f"Open it on the replay page with 'Open your own run'.")
    return 0


# -- python -m glassllm train ---------------------------------------------------------------

TRAIN_PROG = "python -m glassllm train"
# option -> (TrainOptions field, what it sets), in the order --help lists them
_TRAIN_MODEL = {"--vocab-size": "vocab_size", "--layers": "n_layers", "--d-model": "d_model", "--heads": "n_heads",
                "--kv-heads": "n_kv_heads", "--d-ff": "d_ff", "--context": "context"}
_TRAIN_RECIPE = {"--steps": "steps", "--batch": "batch_size", "--lr": "lr",
                 "--min-lr": "min_lr", "--warmup": "warmup", "--weight-decay": "weight_decay",
                 "--grad-clip": "grad_clip", "--init-std": "init_std", "--seed": "seed",
                 "--snapshot-every": "snapshot_every"}
_TRAIN_OPTIONS = {**_TRAIN_MODEL, **_TRAIN_RECIPE, "--tie": "tie_word_embeddings"}


def _non_negative_float(text: str) -> float:
    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected a number, got {text!r}") from None
    if not 0 <= value < float("inf"):
        raise argparse.ArgumentTypeError(f"expected a finite number of 0 or more, got {text}")
    return value


def _add_train_command(commands) -> None:
    from .learning.train import TrainOptions
    default = TrainOptions()
    tr = commands.add_parser(
        "train", help="train a model on text files",
        description="Train a Llama on UTF-8 text files (byte tokens, or the subwords of "
                    "a byte-level BPE tokenizer.json with --tokenizer) with glassllm's own "
                    "gradients and AdamW (warm-up + cosine learning rate, gradient "
                    "clipping), writing a checkpoint folder that GlassLM.from_pretrained and "
                    "transformers load. Every --snapshot-every steps the folder is rewritten "
                    "atomically with the optimiser's state, so a stopped run resumes where "
                    "its last snapshot left off (run the same command again, or --resume) "
                    "and ends with the same weights as a run never stopped.")
    tr.add_argument("files", nargs="*", type=Path, metavar="FILE",
                    help="UTF-8 text files to learn from (each byte is one token, or "
                         "--tokenizer's subwords); with --resume, the run's own files when "
                         "none are given")
    tr.add_argument("--out", type=Path, required=True, metavar="DIR",
                    help="the checkpoint folder to write (new or empty, or a run to resume)")
    tr.add_argument("--tokenizer", type=Path, default=None, metavar="PATH",
                    help="a byte-level BPE tokenizer.json (or a folder holding one, e.g. from "
                         "scripts/train_tokenizer.py): the text is read as its tokens, the "
                         "model's vocabulary is its size, and --out gets a copy, so "
                         "from_pretrained and transformers read text as it was trained; "
                         "with --resume, the run's own when not given")
    tr.add_argument("--resume", action="store_true",
                    help="continue the run in --out with its own options (the same command "
                         "resumes too)")
    tr.add_argument("--threads", type=_positive_int, default=1,
                    help="BLAS threads (default 1; a resumed run gives the same bits with the "
                         "same thread count)")
    size = tr.add_argument_group("model size")
    for option, help_text in (("--vocab-size", "token IDs; must match the tokenizer "
                                                "(default: its size, 256 for bytes)"),
                              ("--layers", "blocks"), ("--d-model", "model width"),
                              ("--heads", "query heads"),
                              ("--kv-heads", "key/value heads, must divide --heads"),
                              ("--d-ff", "MLP width (default: Llama's 8/3 of --d-model)"),
                              ("--context", "tokens per training window, also max_len")):
        shown = getattr(default, _TRAIN_MODEL[option])
        size.add_argument(option, type=_positive_int, default=None,
                          help=help_text + ("" if shown is None else f" (default {shown})"))
    size.add_argument("--tie", action="store_const", const=True, default=None,
                      help="tie the output layer to the embedding matrix")
    recipe = tr.add_argument_group("training")
    for option, kind, help_text in (
            ("--steps", _positive_int, f"optimiser steps (default {default.steps})"),
            ("--batch", _positive_int, f"windows per step (default {default.batch_size})"),
            ("--lr", _non_negative_float, f"peak learning rate (default {default.lr:g})"),
            ("--min-lr", _non_negative_float, "learning rate at the end of the cosine "
                                              "(default: --lr / 10)"),
            ("--warmup", _non_negative_int, "steps of linear warm-up (default: a tenth of "
                                            "--steps, at most 100)"),
            ("--weight-decay", _non_negative_float, f"AdamW's decoupled weight decay of the "
                                                    f"matrices (default {default.weight_decay:g})"),
            ("--grad-clip", _non_negative_float, f"clip the gradient's global norm to this; 0: "
                                                 f"no clipping (default {default.grad_clip:g})"),
            ("--init-std", _non_negative_float, f"std of the initial matrices (default "
                                                f"{default.init_std:g})"),
            ("--seed", _non_negative_int, f"seed of the initial weights and of the windows "
                                          f"(default {default.seed})"),
            ("--snapshot-every", _positive_int, f"steps between snapshots (default "
                                                f"{default.snapshot_every})")):
        recipe.add_argument(option, type=kind, default=None, help=help_text)
    tr.set_defaults(run=_train, command_parser=tr, stopped=_train_stopped, train_at=None)


def _train_stopped(args) -> str:
    """What a stopped run left: the step it reached and the snapshot that resumes it."""
    at = args.train_at
    if at is None:
        return f"{_shown(args.out)} was not changed"
    step, snapshot = at
    return (f"stopped at step {step}; {_shown(args.out)} holds the snapshot of step "
            f"{snapshot}: {TRAIN_PROG} --resume --out {_shown(args.out)} continues it")


def _duration(seconds: float) -> str:
    seconds = int(round(seconds))
    hours, rest = divmod(seconds, 3600)
    return f"{hours}h{rest // 60:02d}m" if hours else f"{rest // 60}m{rest % 60:02d}s"


def _train(args, parser: argparse.ArgumentParser) -> int:
    from dataclasses import replace

    from .learning import train as training
    from .learning.batches import timed_tokens

    def fail(message: str):
        parser.exit(2, f"{parser.prog}: error: {_printable(message)}\n")

    def names(message: str) -> str:  # TrainOptions' and Config's names -> the options typed
        message = _option_names(message.replace("Config.max_len", "--context"))
        for option, name in _TRAIN_OPTIONS.items():
            message = re.sub(rf"(?<![\w.-]){name}(?![\w-])", option, message)
        return message

    out = args.out
    if out.exists() and not out.is_dir():
        fail(f"--out {_shown(out)} is a file; give a folder (new or empty, or a run to resume)")
    try:
        state = training.read_state(out)
    except ValueError as err:
        fail(f"--out: {err}")
    typed = {name: getattr(args, option[2:].replace("-", "_"))
             for option, name in _TRAIN_OPTIONS.items()
             if getattr(args, option[2:].replace("-", "_")) is not None}
    if args.resume and state is None:
        fail(f"--resume: {_shown(out)} holds no training run ({training.STATE_NAME}); start "
             f"one by giving text files")
    try:
        if args.resume:
            options = training.options_of(state)
            differ = [option for option, name in _TRAIN_OPTIONS.items()
                      if name in typed and typed[name] != getattr(options, name)
                      and name != "snapshot_every"]
            if differ:
                fail(f"{', '.join(differ)} differ{'s' if len(differ) == 1 else ''} from the "
                     f"run in {_shown(out)}; --resume continues it with its own options, so "
                     f"drop {'it' if len(differ) == 1 else 'them'}")
            options = replace(options, snapshot_every=typed.get("snapshot_every",
                                                                options.snapshot_every))
        else:
            options = replace(training.TrainOptions(), **typed)
    except ValueError as err:
        fail(names(str(err)))
    if options.warmup is not None and options.warmup > options.steps:
        fail(f"--warmup ({options.warmup}) must not exceed --steps ({options.steps})")
    tokenizer_path = args.tokenizer
    if tokenizer_path is None and args.resume and state.get("tokenizer"):
        tokenizer_path = out / TOKENIZER_NAME  # the run's own copy
    tokenizer = None
    if tokenizer_path is not None:
        try:
            tokenizer = training.read_tokenizer(tokenizer_path)
        except ValueError as err:
            fail(f"--tokenizer: {err}")
    try:
        if state is not None:
            training.check_tokenizer(_shown(out), state, tokenizer)
        options = training.with_tokenizer(options, tokenizer)
    except ValueError as err:
        fail(names(str(err)))
    if state is not None and not args.resume and not training.options_of(state).same_run(options):
        theirs = training.options_of(state)
        shown = lambda value: "the default" if value is None else value  # noqa: E731
        differ = [f"{option} {shown(getattr(theirs, name))} there, "
                  f"{shown(getattr(options, name))} here"
                  for option, name in _TRAIN_OPTIONS.items()
                  if getattr(theirs, name) != getattr(options, name)
                  and name != "snapshot_every"]
        fail(f"--out {_shown(out)} holds a run with other options ({'; '.join(differ)}); "
             f"add --resume to continue it with its own, or give another --out")
    files = args.files or ([Path(f) for f in state["data"]["files"]] if state else [])
    if not files:
        fail("give one or more UTF-8 text files to learn from")
    try:
        data = training.read_texts(files)
        tokens, seconds = timed_tokens(data, tokenizer)
    except ValueError as err:
        fail(str(err))
    if tokenizer is not None:
        print(f"{TRAIN_PROG}: read {len(data):,} bytes as {len(tokens):,} tokens of "
              f"{_shown(tokenizer.path)} ({len(data) / max(len(tokens), 1):.2f} bytes per token) "
              f"in {seconds:.1f} s", file=sys.stderr, flush=True)
    if len(tokens) < options.context + 1:
        what = "bytes" if tokenizer is None else "of the tokenizer"
        fail(f"the text has {len(tokens):,} tokens ({what}), fewer than one window of "
             f"--context {options.context} + 1; give more text or a smaller --context")
    if state is not None and not state.get("finished"):
        args.train_at = (state["step"], state["step"])
        print(f"{TRAIN_PROG}: resuming {_shown(out)} at step {state['step']} of "
              f"{options.steps}", file=sys.stderr)
    shown_at = -math.inf

    def progress(p) -> None:
        nonlocal shown_at
        args.train_at = (p.step, p.step if p.snapshot else args.train_at[1])
        now = time.monotonic()
        if p.step == p.steps or p.step == 1 or now - shown_at >= 2.0:
            shown_at = now
            print(f"{TRAIN_PROG}: step {p.step}/{p.steps}  loss {p.loss:.4f}  lr {p.lr:.2e}  "
                  f"{p.tokens_per_second:,.0f} tokens/s  ETA {_duration(p.eta_seconds)}",
                  file=sys.stderr, flush=True)

    if args.train_at is None:
        args.train_at = (0, 0)
    try:
        with _blas_threads(args.threads):
            result = training.train(tokens, out, options, tokenizer=tokenizer,
                                    sources=[os.path.abspath(f) for f in files],
                                    on_progress=progress)
    except ValueError as err:
        fail(names(str(err)))
    except OSError as err:
        print(f"{TRAIN_PROG}: error: cannot write {_shown(out)}: {err.strerror}",
              file=sys.stderr)
        return 1
    if result.resumed_from == options.steps:
        print(f"{_shown(out)} already holds this run, trained for {options.steps} steps; "
              f"nothing to do")
        return 0
    tail = result.losses[-min(len(result.losses), 10):]
    print(f"wrote {_shown(out)}: {options.steps} steps of {options.batch_size} x "
          f"{options.context} tokens, mean loss of the last {len(tail)} steps "
          f"{sum(tail) / len(tail):.4f}; load it with GlassLM.from_pretrained")
    return 0


# What each signal that stops a run is called, by the shell's exit status 128 + its number
_STOPS = {signal.SIGINT: "interrupted (Ctrl-C)", signal.SIGTERM: "terminated (SIGTERM)"}
if hasattr(signal, "SIGHUP"):  # the terminal went away: stop as for SIGTERM
    _STOPS[signal.SIGHUP] = "hung up (SIGHUP)"


class _Stopped(BaseException):
    """A signal, raised like KeyboardInterrupt so the atomic write removes its temp file."""

    def __init__(self, signum: int) -> None:
        super().__init__(signum)
        self.signum = signum


@contextmanager
def _signals_stop_the_run() -> Iterator[None]:
    """SIGINT, SIGTERM and SIGHUP raise ``_Stopped``; after the first one, every later one
    is ignored, so a second Ctrl-C cannot cut the cleanup short. A signal that was ignored when the
    command started (SIGINT in a shell's background job) stays ignored."""
    if threading.current_thread() is not threading.main_thread():  # handlers: main only
        yield
        return

    def handler(signum, frame):
        for other in _STOPS:  # a Python no-op, not SIG_IGN: a signal already pending would
            signal.signal(other, _after_the_first)  # then print a "race condition" warning
        raise _Stopped(signum)

    previous = {signum: signal.getsignal(signum) for signum in _STOPS}
    for signum, before in previous.items():
        if before is not signal.SIG_IGN:
            signal.signal(signum, handler)
    try:
        yield
    finally:
        for signum, before in previous.items():
            signal.signal(signum, before if before is not None else signal.SIG_DFL)


def _after_the_first(signum, frame) -> None:
    """A signal after the one that stopped the run: the cleanup goes on."""


def _blas_threads(threads: int):
    """BLAS limited to ``threads`` for the run, through threadpoolctl where it is installed
    (the test extra has it; glassllm does not depend on it). Without it BLAS keeps the thread
    count its environment gives (OMP_NUM_THREADS / OPENBLAS_NUM_THREADS), and a note says so
    when another count was asked for."""
    try:
        from threadpoolctl import threadpool_limits
    except ImportError:
        if threads != 1:
            print(f"{TRAIN_PROG}: note: --threads needs the threadpoolctl package "
                  f"(pip install threadpoolctl); BLAS keeps its own thread count "
                  f"(set OMP_NUM_THREADS={threads} instead)", file=sys.stderr)
        return nullcontext()
    return threadpool_limits(threads)


def main(argv: list[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    with _signals_stop_the_run():
        try:
            return args.run(args, args.command_parser)
        except (KeyboardInterrupt, _Stopped) as stop:
            signum = stop.signum if isinstance(stop, _Stopped) else signal.SIGINT
            print(f"{args.command_parser.prog}: {_STOPS[signum]}: {args.stopped(args)}",
                  file=sys.stderr)
            return 128 + signum  # the shell's convention


if __name__ == "__main__":
    sys.exit(main())
