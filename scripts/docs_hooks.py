"""MkDocs hooks of the docs site (``hooks:`` in mkdocs.yml).

A code block's fence carries ``key="value"`` attributes for the tests that run it (see
tests/docs/blocks.py): ``title`` and ``id`` for the reader too, ``exit``, ``serves``,
``network`` and ``setup`` for the tests alone. SuperFences reads a fence's ``title`` but not
its ``id`` in that form, and a fence it cannot read is no fence at all (its code would
swallow the rest of the page). So the site renders each such fence in SuperFences' own
form, ``yaml {title="flows/x.yaml" #its-id}``, without the attributes of the tests.
"""

from __future__ import annotations

import re
from typing import Any

_FENCE = re.compile(r"^(?P<open>[ ]*`{3,}[\w-]+)(?P<attributes>(?:[ ]+\w+=\"[^\"]*\")+)[ ]*$", re.M)
_ATTRIBUTE = re.compile(r'(\w+)="([^"]*)"')


def _rendered(match: re.Match[str]) -> str:
    attributes = dict(_ATTRIBUTE.findall(match["attributes"]))
    kept = [f'title="{attributes["title"]}"'] if "title" in attributes else []
    kept += [f"#{attributes['id']}"] if "id" in attributes else []
    return f"{match['open']} {{{' '.join(kept)}}}" if kept else match["open"]


def on_page_markdown(markdown: str, **_: Any) -> str:
    """The page's text with each fence in SuperFences' form, holding title and id only."""
    return _FENCE.sub(_rendered, markdown)
