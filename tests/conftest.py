"""Hypothesis profiles come from nodegrad's opt-in pytest plugin
(``nodegrad.testing.pytest_plugin``): ``dev`` by default, ``ci`` when ``CI`` is set,
``thorough`` on request through ``NODEGRAD_HYPOTHESIS_PROFILE``.
"""

from nodegrad.testing.pytest_plugin import load_profile

load_profile()
