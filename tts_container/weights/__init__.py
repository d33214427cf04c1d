"""Kokoro weights: the cache both engines load from, where weights come from, and the derived ones."""
