"""The command that installs an extra of this package, as the user's install can take it.

swarm-stepwise is installed from a checkout (or a git URL), not from a package index, so
``pip install 'swarm-stepwise[pytest]'`` would fail. A message that says what to install
names the place this copy was installed from, read from the ``direct_url.json`` pip keeps
beside an install from a path or a URL (PEP 610); only when that is unknown does it fall
back to the package's name. Read only on the way to an error: nothing here runs otherwise.
"""

from __future__ import annotations

DISTRIBUTION = "swarm-stepwise"


def install_source() -> str | None:
    """Where this copy was installed from: a checkout's path or a VCS URL, or None."""
    import json
    from importlib import metadata
    from urllib.parse import unquote, urlparse

    try:
        text = metadata.distribution(DISTRIBUTION).read_text("direct_url.json")
        found = json.loads(text) if text else None
    except (metadata.PackageNotFoundError, ValueError, OSError):
        return None
    if not isinstance(found, dict) or not isinstance(found.get("url"), str):
        return None
    url: str = found["url"]
    if url.startswith("file://"):
        return unquote(urlparse(url).path) or None
    vcs = found.get("vcs_info")
    if isinstance(vcs, dict) and isinstance(vcs.get("vcs"), str):
        return f"{vcs['vcs']}+{url}"
    return None


def install_command(extra: str) -> str:
    """``pip install …`` for ``extra`` of this package, from where this copy came from."""
    source = install_source()
    if source is None:
        return (
            f"pip install '/path/to/swarm-stepwise[{extra}]' (a checkout of swarm-stepwise; "
            "it is on no package index)"
        )
    if "+" in source.split("://", 1)[0]:  # a VCS URL: name @ url
        return f"pip install '{DISTRIBUTION}[{extra}] @ {source}'"
    return f"pip install '{source}[{extra}]'"
