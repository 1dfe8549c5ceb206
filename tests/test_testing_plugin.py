"""The pytest plugin's hypothesis profiles, chosen by environment variables."""

from __future__ import annotations

import pytest
from hypothesis import settings

from nodegrad.testing.pytest_plugin import PROFILES, load_profile


@pytest.mark.parametrize(
    ("env", "expected"),
    [
        ({}, "dev"),
        ({"CI": "true"}, "ci"),
        ({"NODEGRAD_HYPOTHESIS_PROFILE": "thorough"}, "thorough"),
        ({"CI": "true", "NODEGRAD_HYPOTHESIS_PROFILE": "dev"}, "dev"),  # asked for by name wins
    ],
)
def test_the_environment_picks_the_profile(env: dict[str, str], expected: str, monkeypatch: pytest.MonkeyPatch) -> None:
    before = settings._current_profile  # restored below: the rest of the suite keeps its own
    for name in ("CI", "NODEGRAD_HYPOTHESIS_PROFILE"):
        monkeypatch.delenv(name, raising=False)
    for name, value in env.items():
        monkeypatch.setenv(name, value)
    try:
        assert load_profile() == expected
        assert settings.default.max_examples == PROFILES[expected]["max_examples"]
        if "derandomize" in PROFILES[expected]:  # otherwise hypothesis decides (it derandomizes on CI)
            assert settings.default.derandomize == PROFILES[expected]["derandomize"]
    finally:
        settings.load_profile(before)


def test_an_unknown_profile_name_is_an_error(monkeypatch: pytest.MonkeyPatch) -> None:
    before = settings._current_profile
    monkeypatch.setenv("NODEGRAD_HYPOTHESIS_PROFILE", "no-such-profile")
    try:
        with pytest.raises(Exception, match="no-such-profile"):
            load_profile()
    finally:
        settings.load_profile(before)
