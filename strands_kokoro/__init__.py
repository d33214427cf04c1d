"""strands_kokoro."""
