"""The site: one orchestration of its data and pages that the MkDocs plugin and `generate` both call, its options, and the `generate` command. No module here imports a docs host."""
