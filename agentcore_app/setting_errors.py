"""The errors that mean "a setting the app cannot use", as every launcher of the app catches them.

Each is raised while the app is built (:func:`agentcore_app.app.create_app`, or importing
``agentcore_app.app``, whose module-level app reads the environment), never on a request. So a launcher
that catches these around building the app stops before it listens, with one line that names the setting
and exit status 2: ``python -m agentcore_app`` and ``agent-infra demo|serve`` catch this one tuple, so a
new kind of setting error is added once for all of them.
"""

from __future__ import annotations

from agentcore_app.conversation_settings import ConversationSettingError
from agentcore_app.models import ModelSpecError
from agentcore_app.tools import ToolSettingError
from strands_kokoro.sessions import EndpointError

SETTING_ERRORS: tuple[type[Exception], ...] = (
    ModelSpecError,
    ToolSettingError,
    ConversationSettingError,
    EndpointError,
)
