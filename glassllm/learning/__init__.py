"""Learning: the update rule (AdamW, its schedule and clipping), the batches (text files, a
tokenizer, data mixes), training (``python -m glassllm train``), and the lessons, a model
trained while the reader watches and checked by its circuits (``glassllm.interpret``). The top
layer below the entry points."""
