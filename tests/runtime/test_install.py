"""What a message says to install: the command that works for this install (no index has us)."""

from __future__ import annotations

import json
from importlib import metadata
from typing import Any

import pytest

from swarm_runtime import install


class _Dist:
    def __init__(self, direct_url: dict[str, Any] | None) -> None:
        self.text = json.dumps(direct_url) if direct_url is not None else None

    def read_text(self, name: str) -> str | None:
        assert name == "direct_url.json"
        return self.text


def _installed(monkeypatch: pytest.MonkeyPatch, direct_url: dict[str, Any] | None) -> None:
    monkeypatch.setattr(metadata, "distribution", lambda name: _Dist(direct_url))


def test_an_install_from_a_checkout_names_that_checkout(monkeypatch: pytest.MonkeyPatch) -> None:
    _installed(monkeypatch, {"url": "file:///home/me/src/swarm%20stepwise", "dir_info": {}})
    assert install.install_command("pytest") == "pip install '/home/me/src/swarm stepwise[pytest]'"


def test_an_install_from_git_names_the_url(monkeypatch: pytest.MonkeyPatch) -> None:
    _installed(
        monkeypatch,
        {"url": "https://git.example/acme/swarm-stepwise.git", "vcs_info": {"vcs": "git"}},
    )
    assert install.install_command("studio") == (
        "pip install 'swarm-stepwise[studio] @ git+https://git.example/acme/swarm-stepwise.git'"
    )


@pytest.mark.parametrize("direct_url", [None, {"url": "https://files.example/x.whl"}, {"x": 1}])
def test_an_install_of_unknown_origin_says_to_install_from_a_checkout(
    monkeypatch: pytest.MonkeyPatch, direct_url: dict[str, Any] | None
) -> None:
    _installed(monkeypatch, direct_url)
    command = install.install_command("celery")
    assert command.startswith("pip install '/path/to/swarm-stepwise[celery]'")
    assert "no package index" in command


def test_no_distribution_at_all_is_not_an_error(monkeypatch: pytest.MonkeyPatch) -> None:
    def missing(name: str) -> Any:
        raise metadata.PackageNotFoundError(name)

    monkeypatch.setattr(metadata, "distribution", missing)
    assert install.install_source() is None
