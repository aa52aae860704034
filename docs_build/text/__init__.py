"""The bottom layer: text helpers that know nothing of the engine, the site or its host."""
