"""The Kokoro model server: SageMaker's bidirectional-streaming container contract, served by Starlette.

``app`` assembles the server from its capabilities: ``routes`` (the HTTP and WebSocket surface),
``scheduling`` (admission and the deadline-ordered pool), ``synthesis`` (one request's audio), ``text``
(what the model says), ``engines`` (onnx and torch), ``weights`` (where the weights come from) and
``reporting`` (what the server tells operators).
"""
