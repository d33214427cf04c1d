"""One request's audio: its segments, their rendering through the pool, and the joins between them."""
