"""The engine boundary: the child process that runs glassllm, its runner, its cache, its settings, and the one schema both sides read."""
