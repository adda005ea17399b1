"""Credentials from the environment, and finding their values in text before it is written.

Every run file, every event line, every cassette and every golden is scanned for the value
of each credential-like variable (a name with KEY, TOKEN, SECRET, PASSWORD or CREDENTIAL
in it, a value of at least 8 characters) before its bytes reach the disk, in every mode:
a stub run is given a key's value in a ``--param`` as easily as an sdk run is.
"""

from __future__ import annotations

import os
import re
from collections.abc import Iterable, Mapping
from typing import Any

from swarm_runtime.errors import CredentialLeak

SECRET_NAME = re.compile(r"(KEY|TOKEN|SECRET|PASSWORD|CREDENTIAL)", re.I)
MIN_LENGTH = 8
"""Shorter values are too likely to occur by chance to be refused."""


MASK_PREFIX_FROM = 24
"""Values this long show their first 4 characters (a vendor prefix such as ``sk-a``)."""


def mask(value: str) -> str:
    """A credential's value as messages show it: its length, and no more of a short one.

    A long key shows its first 4 characters, which tell which key it is and leave the rest
    unguessable; a short value (a password) shows nothing of itself at all.
    """
    length = f"{len(value)} characters"
    return f"{value[:4]}…, {length}" if len(value) >= MASK_PREFIX_FROM else length


def credential_values(env: Mapping[str, str] | None = None) -> list[str]:
    """The values of every credential-like variable in the environment (8+ chars)."""
    return sorted({value for _, value in Credentials.from_env(env).pairs})


def find_credentials(text: str, secrets: Iterable[str]) -> list[str]:
    """The credential values that occur in ``text`` (masked for messages)."""
    return [mask(s) for s in secrets if s and s in text]


class Credentials:
    """Named credential values that no file may hold; empty when there are none."""

    def __init__(self, pairs: Iterable[tuple[str, str]] = ()) -> None:
        from swarm_runtime.storage.store import json_escape

        unique = {value: name for name, value in sorted(pairs) if len(value) >= MIN_LENGTH}
        self.pairs: tuple[tuple[str, str], ...] = tuple(
            (name, value) for value, name in unique.items()
        )
        # A value with a quote or backslash in it is written JSON-escaped.
        self._needles = tuple((name, value, json_escape(value)) for name, value in self.pairs)

    @classmethod
    def from_env(cls, env: Mapping[str, str] | None = None) -> Credentials:
        """Every credential-like variable of ``env`` (default: ``os.environ``)."""
        return cls.from_envs(os.environ if env is None else env)

    @classmethod
    def from_envs(cls, *envs: Mapping[str, Any]) -> Credentials:
        """Every credential-like variable of each environment given to a run.

        The process environment and the ``env`` of each engine in ``runtime.yaml``: a key
        that lives only in the file is as secret as one exported in the shell.
        """
        return cls(
            (name, value)
            for env in envs
            for name, value in env.items()
            if isinstance(value, str) and SECRET_NAME.search(name)
        )

    @classmethod
    def of(cls, values: Iterable[str] | Credentials) -> Credentials:
        """``values`` as credentials (plain values are named "a credential")."""
        if isinstance(values, Credentials):
            return values
        return cls(("a credential", value) for value in values if value)

    def __bool__(self) -> bool:
        return bool(self.pairs)

    def found_in(self, text: str) -> tuple[str, str] | None:
        """The (variable, masked value) of the first credential ``text`` holds, or None."""
        for name, value, escaped in self._needles:
            if value in text or escaped in text:
                return name, mask(value)
        return None

    def scrub(self, text: str) -> str:
        """``text`` with every credential value in it replaced by ``[scrubbed NAME]``."""
        for name, value, escaped in self._needles:
            text = text.replace(value, f"[scrubbed {name}]").replace(escaped, f"[scrubbed {name}]")
        return text

    def scrub_value(self, value: Any) -> Any:
        """:meth:`scrub` over every string (and UTF-8 bytes) of a nested value, as a copy."""
        if not self._needles:
            return value
        if isinstance(value, str):
            return self.scrub(value)
        if isinstance(value, bytes | bytearray):
            data = bytes(value)
            for name, secret, escaped in self._needles:
                for needle in {secret, escaped}:
                    data = data.replace(needle.encode(), f"[scrubbed {name}]".encode())
            return data
        if isinstance(value, Mapping):
            return {key: self.scrub_value(item) for key, item in value.items()}
        if isinstance(value, list | tuple):
            return type(value)(self.scrub_value(item) for item in value)
        return value

    def check_value(self, value: Any, what: str) -> None:
        """:meth:`check` every string (and bytes, as UTF-8) in a nested value, keys too."""
        if not self._needles:
            return
        stack = [value]
        while stack:
            item = stack.pop()
            if isinstance(item, str):
                self.check(item, what)
            elif isinstance(item, bytes | bytearray):
                self.check(bytes(item).decode("utf-8", "replace"), what)
            elif isinstance(item, Mapping):
                stack.extend(item.keys())
                stack.extend(item.values())
            elif isinstance(item, list | tuple | set):
                stack.extend(item)

    def check(self, text: str, what: str) -> None:
        """Raise :class:`CredentialLeak` naming ``what`` if ``text`` holds a credential."""
        if not self._needles:
            return
        found = self.found_in(text)
        if found is not None:
            name, masked = found
            raise CredentialLeak(
                f"refusing to write {what}: it holds the value of {name} ({masked}); keep "
                "secrets out of params, scenarios, prompts and replies"
            )
