"""The serving plumbing's codes: what both local servers refuse from a loopback caller, written once.

Each server answers a refusal in its own format (a wire ``error`` frame, an SSE ``error`` event, the
OpenAI route's error body); the code and its HTTP status are the same on both, and are these.
"""

from __future__ import annotations

from enum import StrEnum
from typing import Final

__all__ = ["STATUS", "ServingErrorCode"]


class ServingErrorCode(StrEnum):
    """Stable codes of a local server's refusal of a loopback caller (never in a container)."""

    ORIGIN_NOT_ALLOWED = "origin_not_allowed"  # a page of a foreign origin
    BAD_CONTENT_TYPE = "bad_content_type"  # a POST body that is not application/json
    HOST_NOT_ALLOWED = "host_not_allowed"  # a Host that is not a loopback name (DNS rebinding)
    DUPLICATE_HOST = "duplicate_host"  # more than one Host header


# The HTTP status each refusal is answered with.
STATUS: Final[dict[str, int]] = {
    ServingErrorCode.ORIGIN_NOT_ALLOWED: 403,
    ServingErrorCode.BAD_CONTENT_TYPE: 415,
    ServingErrorCode.HOST_NOT_ALLOWED: 421,
    ServingErrorCode.DUPLICATE_HOST: 400,
}
