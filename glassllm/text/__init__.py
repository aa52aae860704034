"""Text: from a string to token ids and back. The byte-level tokenizer, byte-level BPE as
GPT-2 and Llama 3 have it, and the ``tokenizer.json`` a checkpoint carries. Below the model;
it reads files through ``glassllm.files``."""
