"""What both servers (the Kokoro model server and the agent app) share, and the client library does not.

Both are Starlette apps run by uvicorn and answer silent, cross-site and misdirected callers alike: the
deadlines and their coded 408 (:mod:`~kokoro_serving.deadlines`), uvicorn's protocol with a header
deadline and the settings both run with (:mod:`~kokoro_serving.uvicorn_protocol`), the local-caller guard
(:mod:`~kokoro_serving.local_callers`, its codes in :mod:`~kokoro_serving.errors`), the coded 404/405
(:mod:`~kokoro_serving.routes`), a taken port (:mod:`~kokoro_serving.ports`), a thread's call awaited
through cancellations (:mod:`~kokoro_serving.uninterruptible`). Needs the servers' extras (Starlette,
uvicorn); of the client it imports only :mod:`strands_kokoro.protocol`, and the client never imports it.
"""
