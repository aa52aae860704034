"""glassllm: a glass-box Llama-style language model in NumPy, recorded step by step."""

from .model import Config, GenerationStep, GlassLM
from .nn import Tensor
from .steps import STEPS, StepInfo
from .tokenizer import BYTE_VOCAB_SIZE, decode, encode
from .trace import StepRecord, Tracer

__all__ = [
    "BYTE_VOCAB_SIZE", "Config", "GenerationStep", "GlassLM", "STEPS", "StepInfo",
    "StepRecord", "Tensor", "Tracer", "decode", "encode",
]
__version__ = "0.1.0"
