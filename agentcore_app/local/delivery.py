"""How the demo's turns reach an agent app: the target (a URL or a runtime ARN), its check, and the
transport and audio format (``--transport``, ``--format``). A target that cannot be talked to is one
:class:`TargetError` line, never a client library's traceback.
"""

from __future__ import annotations

import argparse
import contextlib
from dataclasses import dataclass

import httpx

from agentcore_app.local.client import run_turn
from agentcore_app.local.turn_record import TurnRecord

Target = str | contextlib.AbstractAsyncContextManager[str]
"""An agent app URL / runtime ARN, or a context that yields one for as long as the demo runs."""


class TargetError(RuntimeError):
    """The target cannot be asked, or did not answer as an agent app does; the message names it and why."""


def check_target(endpoint: str) -> str:
    """``endpoint`` if a turn can be sent to it (an http(s) URL or a runtime ARN), else ``ValueError``.

    Checked before anything is asked: ``127.0.0.1:8080`` would otherwise fail deep inside httpx.
    """
    if endpoint.startswith("arn:"):
        from agentcore_app.local.ws_client import runtime_region

        runtime_region(endpoint)  # ValueError when it is not an AgentCore runtime ARN
        return endpoint
    if not endpoint.startswith(("http://", "https://")) or not endpoint.split("://", 1)[1].strip("/"):
        raise ValueError(
            f"--endpoint-url {endpoint!r}: use an agent app's http://host:port or an AgentCore runtime "
            "ARN (arn:aws:bedrock-agentcore:...)"
        )
    return endpoint


def _reason(exc: BaseException) -> str:
    said = str(exc).strip()
    return f"{type(exc).__name__}: {said}" if said else type(exc).__name__


@dataclass(frozen=True, slots=True)
class Delivery:
    """How the turns reach the client: the transport and the audio format (``--transport``, ``--format``)."""

    transport: str = "sse"
    audio_format: str | None = None

    @classmethod
    def of(cls, args: argparse.Namespace) -> Delivery:
        return cls(getattr(args, "transport", "sse") or "sse", getattr(args, "audio_format", None))

    def recorded(self) -> dict[str, str]:
        """How the numbers of ``--json`` were delivered (the format the app sends when none is asked)."""
        return {"transport": self.transport, "format": self.audio_format or "pcm"}

    async def turn(
        self,
        endpoint: str,
        prompt: str,
        mode: str,
        *,
        http_client: httpx.AsyncClient,
        voice: str | None,
        session_id: str | None = None,
    ) -> TurnRecord:
        """One turn, delivered this way; :class:`TargetError` when the endpoint cannot be talked to."""
        from httpx_sse import SSEError
        from websockets.exceptions import InvalidStatus, WebSocketException

        aws: tuple[type[Exception], ...] = ()
        with contextlib.suppress(ImportError):  # botocore: only for an AgentCore runtime's ARN
            from botocore.exceptions import BotoCoreError

            aws = (BotoCoreError,)
        try:
            return await run_turn(
                endpoint,
                prompt,
                mode,
                http_client=http_client,
                voice=voice,
                session_id=session_id,
                transport=self.transport,
                audio_format=self.audio_format,
            )
        except (SSEError, InvalidStatus) as exc:
            # Something answered, but not as an agent app: most often the model server's port given for
            # the agent app's (the model server answers a turn with JSON, and has no /ws).
            raise TargetError(
                f"{endpoint} answered, but not as an agent app ({_reason(exc)}); the demo talks to the agent "
                "app (python -m agentcore_app), not to the model server"
            ) from exc
        except (httpx.TransportError, WebSocketException, OSError) as exc:
            # Nothing listening, no scheme, not an agent app, a dropped connection: one line, not httpx's
            # (or websockets') traceback. OSError: the WebSocket client's connection refused / timed out.
            raise TargetError(f"{endpoint} did not answer ({_reason(exc)})") from exc
        except aws as exc:  # no credentials, no route to the region: what botocore says, in one line
            raise TargetError(f"{endpoint} could not be asked ({_reason(exc)})") from exc


SSE_PCM = Delivery()
"""The default: POST /invocations, PCM audio."""
