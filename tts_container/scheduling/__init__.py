"""Who is served and when: admission against measured capacity, listeners' clocks, the deadline-ordered
pool."""
