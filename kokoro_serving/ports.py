"""A port a server cannot listen on, found before the server starts.

Why here: uvicorn binds only after the app's start-up, so a taken port was found after the model
server's engine had loaded (~30 s on a CPU) and reported by uvicorn as a raw ``[Errno 98]`` line, after
the agent app had already announced the address (``agent-infra serve`` added two tracebacks). Both
servers and the local launcher ask here first and say it in one line.
"""

from __future__ import annotations

import socket


def unusable_port(host: str, port: int) -> str | None:
    """Why ``host:port`` cannot be served (``"cannot serve on 127.0.0.1:8080: Address already in
    use"``), or None when it can; port 0 (a free one, the OS's choice) always can."""
    if port == 0:
        return None
    with socket.socket(socket.AF_INET6 if ":" in host else socket.AF_INET) as probe:
        probe.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)  # as uvicorn binds
        try:
            probe.bind((host, port))
        except OSError as exc:
            return f"cannot serve on {host}:{port}: {exc.strerror or exc}"
    return None
