"""Command line: ``python -m glassllm record "some text" --tokens 8 --out run.json``.

Writes a recording (see ``glassllm.recording``) that the site's replay page opens with
"Open your own run".
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from .model import Config, GlassLM
from .recording import record_generation, record_loss, write_recording
from .tokenizer import BYTE_VOCAB_SIZE, encode


def _int_at_least(minimum: int):
    """An argparse type: a whole number >= minimum."""
    def parse(text: str) -> int:
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


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="python -m glassllm",
        description="glassllm: a glass-box Llama-style language model in NumPy.")
    commands = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")
    rec = commands.add_parser(
        "record", help="record a traced run as JSON for the replay page",
        description="Run the model on TEXT with the tracer on and write every snapshot, in "
                    "recorded order, as a JSON recording. Open it on the site's replay page "
                    "with 'Open your own run'. The weights are random for the seed (the "
                    "model is not trained), so the generated text is gibberish; the point "
                    "is to watch every step.")
    rec.add_argument("text", help="the prompt (generation) or the text to score (--loss); "
                                  "each UTF-8 byte is one token")
    rec.add_argument("--tokens", type=_positive_int, default=8, metavar="N",
                     help="how many tokens to generate (default 8)")
    rec.add_argument("--out", type=Path, default=Path("run.json"), metavar="PATH",
                     help="where to write the recording (default run.json)")
    rec.add_argument("--loss", action="store_true",
                     help="record the loss of TEXT predicting itself shifted by one token "
                          "instead of a generation")
    model = rec.add_argument_group("model size")
    model.add_argument("--layers", type=_positive_int, default=2, help="blocks (default 2)")
    model.add_argument("--d-model", type=_positive_int, default=64,
                       help="model width (default 64)")
    model.add_argument("--heads", type=_positive_int, default=4,
                       help="query heads (default 4)")
    model.add_argument("--kv-heads", type=_positive_int, default=2,
                       help="key/value heads, must divide --heads (default 2)")
    model.add_argument("--d-ff", type=_positive_int, default=None,
                       help="MLP width (default: Llama's 8/3 of --d-model)")
    model.add_argument("--max-len", type=_positive_int, default=None,
                       help="context length (default: 64, or longer if the run needs it)")
    model.add_argument("--seed", type=_non_negative_int, default=0,
                       help="seed of the random weights (default 0)")
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
    rec.set_defaults(run=_record, command_parser=rec)
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


def _record(args, parser: argparse.ArgumentParser) -> int:
    fail = parser.error  # prints usage and the message to stderr, exits with status 2
    if not args.text:
        fail("TEXT is empty; give at least one character")
    if args.greedy and args.temperature is not None:
        fail("--temperature has no effect with --greedy; drop one of them")
    if args.loss and (args.greedy or args.temperature is not None or args.top_k is not None):
        fail("--greedy, --temperature and --top-k choose how to generate; a --loss "
             "recording does not generate, so drop them")
    out = args.out
    if out.is_dir():
        fail(f"--out {out} is a folder; give a file name such as {out / 'run.json'}")
    if not out.parent.is_dir():
        fail(f"--out {out}: the folder {out.parent} does not exist; create it first")
    tokens = encode(args.text)
    needed = len(tokens) if args.loss else len(tokens) + args.tokens
    max_len = args.max_len if args.max_len is not None else max(64, needed)
    if needed > max_len:
        fail(f"the run needs {needed} positions but --max-len is {max_len}; raise --max-len "
             f"or shorten the text" + ("" if args.loss else " or lower --tokens"))
    try:
        config = Config(vocab_size=BYTE_VOCAB_SIZE, d_model=args.d_model,
                        n_layers=args.layers, n_heads=args.heads, n_kv_heads=args.kv_heads,
                        max_len=max_len, d_ff=args.d_ff, seed=args.seed)
        model = GlassLM(config)
        if args.loss:
            rec = record_loss(model, tokens)
        else:
            rec = record_generation(
                model, tokens, args.tokens, greedy=args.greedy,
                temperature=1.0 if args.temperature is None else args.temperature,
                top_k=args.top_k, seed=args.sample_seed)
    except ValueError as err:
        fail(_option_names(str(err)))
    try:
        size = write_recording(rec, out)
    except OSError as err:
        print(f"python -m glassllm record: error: cannot write {out}: {err.strerror}",
              file=sys.stderr)
        return 1
    if rec.kind == "generation":
        what = (f"generation of {len(rec.generated)} token(s) after a "
                f"{len(rec.prompt)}-token prompt")
    else:
        what = f"loss over {len(rec.prompt)} position(s), loss = {rec.loss:.4f}"
    print(f"wrote {out}: {what}, {len(rec.events)} events, {size / 1e6:.2f} MB. "
          f"Open it on the replay page with 'Open your own run'.")
    return 0


def main(argv: list[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    return args.run(args, args.command_parser)


if __name__ == "__main__":
    sys.exit(main())
