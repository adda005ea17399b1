"""The studio's front end: a page, a script and a style sheet shipped inside the package.

No build step: the files under ``studio/static/`` are served as they are. Only the names
listed in :data:`ASSETS` can be served, so no request path ever reaches the file system.
"""

from __future__ import annotations

from functools import cache
from importlib import resources

ASSETS = {
    "index.html": "text/html; charset=utf-8",
    "studio.js": "text/javascript; charset=utf-8",
    "studio.css": "text/css; charset=utf-8",
}
"""Every file the studio serves, with its media type."""


@cache
def asset(name: str) -> tuple[bytes, str] | None:
    """The bytes and media type of a shipped file, or None when ``name`` is not one."""
    media_type = ASSETS.get(name)
    if media_type is None:
        return None
    return resources.files("swarm_runtime.studio").joinpath("static", name).read_bytes(), media_type
