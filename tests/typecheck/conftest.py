# negative.py is for a type checker only: run, its first call raises.
collect_ignore = ["negative.py"]
