"""glassllm: a glass-box Llama-style language model in NumPy, recorded step by step."""

import os
import signal
import sys
from pathlib import Path


def _interrupted_while_starting(signum, frame) -> None:
    """Ctrl-C while the command's imports run (a second or so), before it sets up its own
    handling: nothing is written yet, so stop as the command does, quietly, status 130."""
    print("python -m glassllm: interrupted (Ctrl-C) while starting; nothing was written",
          file=sys.stderr, flush=True)
    os._exit(128 + signal.SIGINT)


def _started_as_the_command() -> bool:
    """``python -m glassllm`` (sys.argv[0] is "-m" while its package is imported) or the
    ``glassllm`` console script."""
    if sys.argv[:1] != ["-m"]:
        return bool(sys.argv) and Path(sys.argv[0]).name == "glassllm"
    argv = getattr(sys, "orig_argv", [])  # the interpreter's: its first -m names the module
    for i, arg in enumerate(argv):
        if arg.startswith("-m"):
            return (arg[2:] or "".join(argv[i + 1:i + 2])) == "glassllm"
    return False


# before the imports below (NumPy's take most of the start-up): a shell's background job
# has SIGINT ignored, and keeps it so
if _started_as_the_command() and signal.getsignal(signal.SIGINT) is signal.default_int_handler:
    try:
        signal.signal(signal.SIGINT, _interrupted_while_starting)
    except ValueError:  # imported in a thread: only the main thread sets handlers
        pass

from . import _old_paths  # noqa: E402  (after the handler above)

_old_paths.install()  # glassllm.optim is glassllm.learning.optim, and so on (_old_paths.py)

from .config import Config  # noqa: E402
from .text.bpe import load_tokenizer  # noqa: E402
from .model import GenerationStep, GlassLM
from .nn import Tensor
from .steps import STEPS, StepInfo
from .text.tokenizer import BYTE_VOCAB_SIZE, decode, encode
from .trace import StepRecord, Tracer

# The small subword model the docs site runs on, trained by glassllm with scripts/train_demo.py:
# GlassLM.from_pretrained(DEMO_CHECKPOINT).
DEMO_CHECKPOINT: Path = Path(__file__).resolve().parent / "checkpoints" / "demo"

__all__ = [
    "BYTE_VOCAB_SIZE", "Config", "DEMO_CHECKPOINT", "GenerationStep", "GlassLM", "STEPS", "StepInfo",
    "StepRecord", "Tensor", "Tracer", "decode", "encode", "load_tokenizer",
]
__version__ = "0.1.0"


def __getattr__(name: str):
    """``glassllm.optim`` and the other modules that moved into layers, as attributes too."""
    return _old_paths.moved_attribute(name)
