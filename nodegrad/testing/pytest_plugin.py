"""A pytest plugin registering hypothesis profiles for gradient tests.

Opt in: ``pytest -p nodegrad.testing.pytest_plugin``, or
``pytest_plugins = ["nodegrad.testing.pytest_plugin"]`` in a ``conftest.py`` (installing
nodegrad changes no settings of anyone's tests). Profiles: ``dev`` (50 examples, the
default), ``ci`` (25 examples, derandomized so that a failure in CI fails the same way on
any machine, no example database, reproduction blobs printed; the default when the ``CI``
environment variable is set) and ``thorough`` (500 examples).
``NODEGRAD_HYPOTHESIS_PROFILE=<name>`` picks one. No profile has a deadline: gradient
tests check values, not speed. A profile of one of these names that is already
registered (your own ``ci``, say) is used as it is, never replaced. Without hypothesis
installed the plugin does nothing.
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
    """Register the profiles not registered yet and load the one the environment asks for;
    return its name."""
    try:
        from hypothesis import settings
        from hypothesis.errors import InvalidArgument
    except ImportError:
        return None
    for name, options in PROFILES.items():
        try:
            existing = settings.get_profile(name)
        except InvalidArgument:
            existing = None
        if existing is None or existing is _hypothesis_builtin(name):
            settings.register_profile(name, **options)  # type: ignore[arg-type]
        # else: registered by the user, who keeps it
    chosen = os.environ.get("NODEGRAD_HYPOTHESIS_PROFILE") or ("ci" if os.environ.get("CI") else "dev")
    settings.load_profile(chosen)
    return chosen


def _hypothesis_builtin(name: str) -> Any:
    """Hypothesis's own profile of that name (it registers a ``ci`` profile itself), which,
    unlike one the user registered, gives way to ours."""
    import hypothesis._settings as hypothesis_settings  # no public name for it

    return getattr(hypothesis_settings, name.upper(), None) if name == "ci" else None


def pytest_configure(config: Any) -> None:
    """Load the profile before any test module is collected."""
    load_profile()
