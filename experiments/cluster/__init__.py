"""Ray for the scripts (the ``[scale]`` extra): connecting, and game jobs as tasks.

``connect``: a local Ray on 127.0.0.1 or a cluster by its address, with a timeout; ``tasks``: the
match library's game jobs as Ray tasks.
"""
