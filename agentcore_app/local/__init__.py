"""The agent app on this machine and its clients: what ``agent-infra demo|serve`` run, never the deployed app.

- :mod:`~agentcore_app.local.commands`: the launcher (``python -m agentcore_app.local.commands``), and
  :mod:`~agentcore_app.local.stack`, which starts the model server and the app on free ports;
- :mod:`~agentcore_app.local.demo` and :mod:`~agentcore_app.local.demo_conversation`: the demo, a client
  of the app (:mod:`~agentcore_app.local.client`, :mod:`~agentcore_app.local.ws_client`, chosen by
  :mod:`~agentcore_app.local.delivery`), and what it leaves behind (:mod:`~agentcore_app.local.turn_record`,
  :mod:`~agentcore_app.local.playback`, :mod:`~agentcore_app.local.report`,
  :mod:`~agentcore_app.local.timeline`);
- :mod:`~agentcore_app.local.paced_model`: an LLM released at a hosted model's pace;
- :mod:`~agentcore_app.local.player`: the browser voice player (``static/``), served beside the app.

The deployed app (:mod:`agentcore_app.app`) imports none of it.
"""
