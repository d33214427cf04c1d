"""What both servers (the Kokoro model server and the agent app) share, and the client library does not.

Both are Starlette apps run by uvicorn, and both answer silent, cross-site and misdirected callers the
same way, so a proxy in front of either sees the same behaviour:

- :mod:`kokoro_serving.deadlines`: the limits for a request being received, the coded 408 answer, and
  the request-body deadline (an ASGI middleware);
- :mod:`kokoro_serving.uvicorn_protocol`: uvicorn's HTTP protocol with a deadline for the request
  headers, and the uvicorn settings both servers run with;
- :mod:`kokoro_serving.local_callers`: a locally bound server answers only local callers and its own
  pages (no cross-site requests, no DNS rebinding);
- :mod:`kokoro_serving.errors`: the codes of a local caller's refusal, and their HTTP statuses;
- :mod:`kokoro_serving.routes`: the coded answer to a path or method a server does not serve;
- :mod:`kokoro_serving.ports`: a port that is taken, found before a server starts;
- :mod:`kokoro_serving.uninterruptible`: awaiting a thread's call through any number of cancellations.

It needs the servers' extras (``container`` or ``agent``: Starlette, uvicorn) and imports nothing of
``strands_kokoro`` but :mod:`strands_kokoro.protocol`; ``strands_kokoro`` never imports it.
"""
