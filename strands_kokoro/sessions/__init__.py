"""Sessions to a Kokoro server, chosen by endpoint string (see ``open_session``)."""
