"""The ``/ws`` inbox of a spoken conversation: the microphone's audio and turns typed meanwhile reach the
conversation in the order they were sent (audio joined up to a typed turn), and nothing after the end."""

from __future__ import annotations

import asyncio

from agentcore_app.voice_input import UserInbox


def test_audio_and_typed_turns_come_in_order_and_the_end_stays_the_end() -> None:
    inbox = UserInbox()
    inbox.put(b"\x01\x00")
    inbox.put(b"\x02\x00")
    inbox.type("And of Germany?")
    inbox.put(b"\x03\x00")
    inbox.close()
    inbox.type("too late")

    async def drain() -> list[bytes | str | None]:
        inbox.bind()
        return [await inbox.get() for _ in range(5)]

    assert asyncio.run(drain()) == [b"\x01\x00\x02\x00", "And of Germany?", b"\x03\x00", None, None]
