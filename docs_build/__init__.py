"""The glassllm site's build, in layers (each imports only those below it; tests/docs_build/
test_layers.py keeps it so): ``errors`` and ``text/`` (text helpers), ``engine/`` (the child
process that runs glassllm, its runner, cache and settings, and the one schema both sides
read), ``data/`` (the site's data), ``html/`` (fragments that know no page), ``pages/`` (the
pages, one URL scheme), ``site/`` (the orchestration the plugin and ``generate`` call), and
``host/`` (the MkDocs plugin). This file imports nothing: the engine's child imports it."""
