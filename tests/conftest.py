"""Hypothesis profiles come from nodegrad's pytest plugin (``nodegrad.testing.pytest_plugin``):
``dev`` by default, ``ci`` when ``CI`` is set, ``thorough`` on request through
``NODEGRAD_HYPOTHESIS_PROFILE``. Loading it here too keeps an uninstalled checkout right.
"""

from nodegrad.testing.pytest_plugin import load_profile

load_profile()
