"""A port a server cannot listen on, found before the server starts.

uvicorn binds only after the app's start-up (the model server's engine load), so both servers and the
local launcher ask here first and say a taken port in one line, before any work or announcement.
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
