"""The agent app on this machine and its clients: what ``agent-infra demo|serve`` run, never the deployed app.

:mod:`~agentcore_app.local.commands` is the launcher and :mod:`~agentcore_app.local.stack` starts the model
server and the app on free ports; :mod:`~agentcore_app.local.demo` (and ``demo_conversation``,
``voice_in``) is a client of the app (``client``, ``ws_client``, chosen by ``delivery``), with what it
leaves behind (``turn_record``, ``playback``, ``report``, ``timeline``);
:mod:`~agentcore_app.local.paced_model` is an LLM released at a hosted model's pace;
:mod:`~agentcore_app.local.player` serves the browser voice player (``static/``) beside the app.
The deployed app (:mod:`agentcore_app.app`) imports none of it.
"""
