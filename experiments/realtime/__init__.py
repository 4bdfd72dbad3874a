"""The real-time game of ``experiments.play``: one engine, two front ends.

``engine``: a game on a wall clock (the bot moves on its latency, a human's moves land after
their real reaction), a sitting of games and the fit of the human's latencies; ``keys``: the keys
both front ends read alike; ``tui``: the terminal's Textual app; ``web``: the browser's Starlette
app and ``page/``, its page (drawn with the replay page's table).
"""
