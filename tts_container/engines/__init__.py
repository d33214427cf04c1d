"""Kokoro inference engines: ``onnx`` (CPU default) and ``torch`` (default when CUDA is available)."""
