"""The pytest plugin's hypothesis profiles, chosen by environment variables."""

from __future__ import annotations

import importlib.metadata

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


def test_a_profile_the_user_registered_is_kept(monkeypatch: pytest.MonkeyPatch) -> None:
    before = settings._current_profile
    original = settings.get_profile("ci")
    monkeypatch.setenv("CI", "true")
    monkeypatch.delenv("NODEGRAD_HYPOTHESIS_PROFILE", raising=False)
    settings.register_profile("ci", max_examples=7)  # the user's own ci profile
    try:
        assert load_profile() == "ci"
        assert settings.default.max_examples == 7
    finally:
        settings.register_profile("ci", original)
        settings.load_profile(before)


def test_installing_nodegrad_registers_no_pytest_plugin() -> None:
    # Opt-in only (-p nodegrad.testing.pytest_plugin): an installed entry point would
    # change the hypothesis settings of every test suite on the machine.
    plugins = importlib.metadata.entry_points(group="pytest11")
    assert [ep.value for ep in plugins if ep.value.startswith("nodegrad")] == []
