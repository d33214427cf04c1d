"""AgentCore's runtime session: the header that names the conversation a turn belongs to, and fresh ids.

The agent app's server reads the header (POST /invocations, ``/ws``) and its clients write it, so it lives
in a module of its own that neither side's transport code owns.
"""

from __future__ import annotations

import uuid

SESSION_HEADER = "X-Amzn-Bedrock-AgentCore-Runtime-Session-Id"
"""AgentCore's runtime session id: the conversation a turn belongs to (the agent app remembers it)."""


def new_session_id(label: str = "demo") -> str:
    """A fresh conversation id AgentCore accepts (33+ characters) and the agent app's pattern allows."""
    return f"{label}-{uuid.uuid4()}"
