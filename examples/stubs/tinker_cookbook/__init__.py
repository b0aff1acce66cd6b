"""Stand-in for tinker-cookbook: the names examples/tinker_env.py imports."""
