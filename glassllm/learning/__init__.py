"""Learning: the update rule (AdamW, its schedule and clipping), training from text files
(``python -m glassllm train``), and the lessons, a model trained while the reader watches and
checked by its circuits (``glassllm.interpret``). The top layer below the entry points."""
