"""The real-time game of ``experiments.play``: the engine and the terminal interface.

``engine``: a game on a wall clock (the bot moves on its latency, a human's moves land after
their real reaction); ``tui``: the Textual app.
"""
