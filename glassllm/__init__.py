"""glassllm: a glass-box Llama-style language model in NumPy, recorded step by step."""

from pathlib import Path

from .bpe import load_tokenizer
from .config import Config
from .model import GenerationStep, GlassLM
from .nn import Tensor
from .steps import STEPS, StepInfo
from .tokenizer import BYTE_VOCAB_SIZE, decode, encode
from .trace import StepRecord, Tracer

# The small byte-level model the docs site runs on, trained by scripts/train_demo.py:
# GlassLM.from_pretrained(DEMO_CHECKPOINT).
DEMO_CHECKPOINT: Path = Path(__file__).resolve().parent / "checkpoints" / "demo"

__all__ = [
    "BYTE_VOCAB_SIZE", "Config", "DEMO_CHECKPOINT", "GenerationStep", "GlassLM", "STEPS", "StepInfo",
    "StepRecord", "Tensor", "Tracer", "decode", "encode", "load_tokenizer",
]
__version__ = "0.1.0"
