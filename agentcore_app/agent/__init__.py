"""What the app's agent is made of: its LLM (:mod:`~agentcore_app.agent.models`, the embedded one in
:mod:`~agentcore_app.agent.local_llm`), its tools (:mod:`~agentcore_app.agent.tools`, the default
:mod:`~agentcore_app.agent.arithmetic`) and the date and time it is told
(:mod:`~agentcore_app.agent.time_context`)."""
