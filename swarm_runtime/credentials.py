"""Credentials from the environment, and finding their values in text before it is written."""

from __future__ import annotations

import os
import re
from collections.abc import Iterable, Mapping

__all__ = ["credential_values", "find_credentials"]

SECRET_NAME = re.compile(r"(KEY|TOKEN|SECRET|PASSWORD|CREDENTIAL)", re.I)


def credential_values(env: Mapping[str, str] | None = None) -> list[str]:
    """The values of every credential-like variable in the environment (8+ chars)."""
    source = os.environ if env is None else env
    return sorted(
        {value for name, value in source.items() if SECRET_NAME.search(name) and len(value) >= 8}
    )


def find_credentials(text: str, secrets: Iterable[str]) -> list[str]:
    """The credential values that occur in ``text`` (masked for messages)."""
    return [f"{s[:4]}…{s[-2:]}" for s in secrets if s and s in text]
