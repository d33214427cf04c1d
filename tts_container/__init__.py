"""tts_container."""
