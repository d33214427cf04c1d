"""Conversations that remember: where they live and how they are bounded
(:mod:`~agentcore_app.conversation.settings`), the store (:mod:`~agentcore_app.conversation.store`), the
rules a remembered history keeps (:mod:`~agentcore_app.conversation.history`) and one spoken turn of a
conversation (:mod:`~agentcore_app.conversation.turn`)."""
