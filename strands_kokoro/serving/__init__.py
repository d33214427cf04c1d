"""What both servers (the Kokoro model server and the agent app) do about callers that go silent.

A caller whose request headers or body stop arriving holds a connection and a task for as long as it
likes unless the server sets a deadline; uvicorn has none for a request being received (only one for
the idle time between requests). This package holds the deadlines both servers use, so the two agree
and a proxy in front of either sees the same behaviour:

- :mod:`strands_kokoro.serving.deadlines`: the limits, the coded 408 answer, and the request-body
  deadline (an ASGI middleware, no dependency beyond the standard library);
- :mod:`strands_kokoro.serving.uvicorn_protocol`: uvicorn's HTTP protocol with a deadline for the
  request headers, and the uvicorn settings both servers run with (it needs uvicorn, which only the
  servers' extras install; nothing else in ``strands_kokoro`` imports it);
- :mod:`strands_kokoro.serving.ports`: a port that is taken, found before a server starts.

The agent library itself (``KokoroSpeech``, the sessions) never imports this package.
"""
