"""Hypothesis profiles for the test suite.

Profiles: ``dev`` (default, 50 examples), ``ci`` (25 examples, no example database,
reproduction blobs printed; the default when the ``CI`` environment variable is set) and
``thorough`` (500 examples). ``NODEGRAD_HYPOTHESIS_PROFILE=<name>`` picks one explicitly.
No profile has a deadline: these tests check values, not speed, and a first call that
warms numpy up must not fail a test.
"""

from __future__ import annotations

import os

from hypothesis import settings

settings.register_profile("ci", max_examples=25, deadline=None, print_blob=True, database=None)
settings.register_profile("dev", max_examples=50, deadline=None)
settings.register_profile("thorough", max_examples=500, deadline=None)

_default = "ci" if os.environ.get("CI") else "dev"
settings.load_profile(os.environ.get("NODEGRAD_HYPOTHESIS_PROFILE") or _default)
