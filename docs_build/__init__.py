"""The glassllm documentation-site generator: a thin MkDocs plugin over plain functions."""
