"""The real-time game of ``experiments.play``: ``engine`` (a game on a wall clock: the bot moves
on its latency, a human's moves land after their real reaction) and ``tui`` (the Textual app)."""
