"""A pytest plugin registering hypothesis profiles for gradient tests.

Installed with nodegrad (entry point ``pytest11``). Profiles: ``dev`` (50 examples, the
default), ``ci`` (25 examples, derandomized so that a failure in CI fails the same way on
any machine, no example database, reproduction blobs printed; the default when the ``CI``
environment variable is set) and ``thorough`` (500 examples).
``NODEGRAD_HYPOTHESIS_PROFILE=<name>`` picks one. No profile has a deadline: gradient
tests check values, not speed. Without hypothesis installed the plugin does nothing.
"""

from __future__ import annotations

import os
from typing import Any

__all__ = ["load_profile", "pytest_configure"]

PROFILES = {
    "ci": {"max_examples": 25, "deadline": None, "print_blob": True, "database": None, "derandomize": True},
    "dev": {"max_examples": 50, "deadline": None},
    "thorough": {"max_examples": 500, "deadline": None},
}


def load_profile() -> str | None:
    """Register the profiles and load the one the environment asks for; return its name."""
    try:
        from hypothesis import settings
    except ImportError:
        return None
    for name, options in PROFILES.items():
        settings.register_profile(name, **options)  # type: ignore[arg-type]
    chosen = os.environ.get("NODEGRAD_HYPOTHESIS_PROFILE") or ("ci" if os.environ.get("CI") else "dev")
    settings.load_profile(chosen)
    return chosen


def pytest_configure(config: Any) -> None:
    """Load the profile before any test module is collected."""
    load_profile()
