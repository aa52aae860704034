"""Interpretability: what runs a trained model to find out how it works. Probes and their
measures, circuits proved by ablating heads, and recordings of a run for the replay. Above the
model, which it runs and edits; below learning."""
