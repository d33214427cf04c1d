"""AWS glue shared by both SageMaker sessions: botocore's credential chain and the coded session error.

Why botocore's chain: the HTTP/2 SDK (``aws-sdk-sagemaker-runtime-http2``) ships its own, smaller resolver
chain (environment, static profiles, ``credential_process``), with no SSO, no assume-role profiles and no
web-identity tokens. A user who runs ``aws sso login`` expects every AWS client to just work, so the
bidirectional session signs with the same credentials boto3 would use, refreshed the way boto3
refreshes them.
"""

from __future__ import annotations

import asyncio
import functools
from typing import TYPE_CHECKING, Any, Self

from strands_kokoro.errors import SessionErrorCode
from strands_kokoro.sessions.base import SessionClosedError

if TYPE_CHECKING:
    import botocore.credentials
    import botocore.session
    from smithy_aws_core.identity import AWSCredentialsIdentity, AWSIdentityProperties


class SageMakerError(SessionClosedError):
    """A SageMaker stream failed or could not be opened; ``code`` is stable, ``aws_code`` is AWS's own.

    It is a :class:`SessionClosedError` because every case means "this stream is gone": the caller reopens
    and re-sends what was not yet spoken (or gives up with a ``speech_error`` carrying ``code``).

    Codes (members of :class:`~strands_kokoro.errors.SessionErrorCode`): ``model_stream_error``
    (SageMaker's ``ModelStreamError``: the container's stream broke or timed out),
    ``internal_stream_failure``, ``model_error`` (the container refused the connection),
    ``endpoint_unavailable`` (validation, throttling, service unavailable), ``no_credentials``,
    ``no_region``, ``unknown_region`` (in no partition botocore knows), ``frame_too_large`` (a response
    frame joined from PARTIAL parts grew past the session's bound), ``connection_failed``.
    """

    # Reopening cannot fix these: the same configuration fails the same way.
    NOT_RETRYABLE = frozenset(
        {
            SessionErrorCode.NO_CREDENTIALS,
            SessionErrorCode.NO_REGION,
            SessionErrorCode.UNKNOWN_REGION,
            SessionErrorCode.NOT_OPEN,
        }
    )

    def __init__(self, code: str, message: str, *, aws_code: str | None = None) -> None:
        super().__init__(message, code=code)
        self.retryable = code not in self.NOT_RETRYABLE
        self.aws_code = aws_code


@functools.cache
def default_botocore_session() -> botocore.session.Session:
    """The process-wide botocore session (env vars, config files, SSO, IMDS, ...), like boto3's default.

    Shared so a reconnect does not walk the credential chain again (IMDS probes take seconds off EC2)
    and every session refreshes the same credentials object (botocore guards its refresh with a lock).
    """
    import botocore.session

    return botocore.session.get_session()


def resolve_region(region: str | None, session: botocore.session.Session) -> str:
    """The explicit region, else the one boto3 would use (``AWS_REGION``, profile ``region``)."""
    resolved = region or session.get_config_variable("region")
    if not resolved:
        raise SageMakerError(
            SessionErrorCode.NO_REGION,
            "no AWS region: pass region=... (or ?region= in the endpoint) or set AWS_REGION",
        )
    return str(resolved)


class BotocoreCredentialsResolver:
    """A smithy ``IdentityResolver`` that hands out botocore's credentials, refreshing them when due.

    botocore decides when temporary credentials need a refresh (``refresh_needed``: its advisory window,
    15 minutes before expiry) and performs it (STS, SSO, IMDS: blocking network calls), so refreshes run
    in a worker thread and never block the event loop. Between refreshes the frozen identity is cached:
    the SDK asks for an identity for every event it signs, i.e. every sentence.
    """

    def __init__(self, session: botocore.session.Session | None = None) -> None:
        self._session = session
        self._credentials: botocore.credentials.Credentials | None = None
        self._identity: AWSCredentialsIdentity | None = None
        self._lock: asyncio.Lock | None = None

    def __deepcopy__(self, memo: dict[int, Any]) -> Self:
        """The SDK deep-copies its config per client and per call; the credential cache must be shared."""
        return self

    async def get_identity(self, *, properties: AWSIdentityProperties) -> AWSCredentialsIdentity:
        identity = self._identity
        if identity is not None and not self._refresh_needed():
            return identity
        if self._lock is None:
            self._lock = asyncio.Lock()
        async with self._lock:
            if self._identity is None or self._refresh_needed():
                self._identity = await asyncio.to_thread(self._load_identity)
            return self._identity

    async def invalidate(self) -> None:
        """Forget the cached identity (the next signature re-reads botocore's credentials)."""
        self._identity = None

    def _refresh_needed(self) -> bool:
        refresh_needed = getattr(self._credentials, "refresh_needed", None)
        return bool(refresh_needed()) if refresh_needed is not None else False

    def _load_identity(self) -> AWSCredentialsIdentity:
        """Runs in a worker thread: the chain walk and the refresh may do network I/O."""
        from smithy_aws_core.identity import AWSCredentialsIdentity

        if self._credentials is None:
            session = self._session if self._session is not None else default_botocore_session()
            self._credentials = session.get_credentials()
            if self._credentials is None:
                raise SageMakerError(
                    SessionErrorCode.NO_CREDENTIALS, "botocore's credential chain found no AWS credentials"
                )
        frozen = self._credentials.get_frozen_credentials()
        return AWSCredentialsIdentity(
            access_key_id=frozen.access_key, secret_access_key=frozen.secret_key, session_token=frozen.token
        )
