"""Files: reading and writing what a model is stored in, safely. Bounded reads of regular
files only, strict JSON, the safetensors format read with NumPy alone, and checkpoint folders in
Hugging Face's layout replaced atomically. Below the model: nothing here imports it
(tests/glassllm/test_imports.py)."""
