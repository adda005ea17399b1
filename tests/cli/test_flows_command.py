"""``swarm flows``: listing and validating flows as a user does."""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path

from tests.conftest import CliResult


def test_flows_list_shows_a_broken_flow_instead_of_failing(
    cli: Callable[..., CliResult], tmp_path: Path
) -> None:
    (tmp_path / "flows" / "broken.yaml").write_text("key: broken\n")
    result = cli("flows", "list")
    assert result.code == 0
    assert "INVALID:" in result.out and "signal" in result.out


def test_validate_names_each_condition_past_its_limits_with_file_and_line(
    cli: Callable[..., CliResult], tmp_path: Path
) -> None:
    """3 000 nested parentheses, 20 000 '!' and a 40 000-term && are flow errors, not a
    step that later fails on RecursionError."""
    hostile = [
        "(" * 3000 + "handoff.ok" + ")" * 3000,
        "!" * 20_000 + "true",
        " && ".join(["handoff.ok"] * 40_000),
    ]
    candidates = "".join(
        f'        - {{id: move_{n}, to: last, when: "{when}"}}\n' for n, when in enumerate(hostile)
    )
    flows = tmp_path / "deep-flows"
    flows.mkdir()
    (flows / "deep.yaml").write_text(
        "key: deep\ntitle: Deep\ndescription: Deep conditions.\nsteps:\n"
        "  - id: first\n    agents: [worker]\n    role: Work.\n"
        "    teaching_notes: {inputs: [i], outputs: [o], emphasizes: [e], constraints: [c]}\n"
        "    routing:\n      kind: navigator\n      default: last\n      candidates:\n"
        + candidates
        + "  - id: last\n    agents: [worker]\n    role: Finish.\n"
        "    teaching_notes: {inputs: [i], outputs: [o], emphasizes: [e], constraints: [c]}\n"
    )
    result = cli("flows", "validate", str(flows))
    assert result.code == 2
    for n, line in enumerate((13, 14, 15)):
        assert f"deep.yaml:{line}, step 'first', field 'routing.candidates.move_{n}.when'" in (
            result.err
        ), result.err
    assert result.err.count("at most") == 3


def _docs_block(page: str, block_id: str) -> str:
    """The body of the block ``block_id`` of the docs page ``page``."""
    from tests.conftest import REPO
    from tests.docs.blocks import page_blocks

    (block,) = [b for b in page_blocks(REPO / page, REPO) if b.id == block_id]
    return block.body


def test_flows_yaml_and_a_persona_do_what_the_docs_say(
    cli: Callable[..., CliResult], tmp_path: Path
) -> None:
    from tests.runtime.helpers import step_yaml, write_flow

    flows = tmp_path / "desk"
    order = _docs_block("docs/flows.md", "order-example")
    written = _docs_block("docs/flows.md", "triage-persona")
    persona = written.split("<<'EOF'\n", 1)[1].split("\nEOF", 1)[0]
    (flows / "agents").mkdir(parents=True)
    (flows / "flows.yaml").write_text(order)
    (flows / "agents" / "triage-intake.md").write_text(persona)
    for key in ("triage", "alpha", "spare"):  # alpha, spare: not in the order
        agents = "[triage-intake, clerk]" if key == "triage" else "[clerk]"
        write_flow(flows, key, [step_yaml(f"{key}_step").replace("[worker]", agents)])
    result = cli("run", "--flows-dir", str(flows), "--runs-dir", str(tmp_path / "runs"))
    assert result.code == 0, result.err
    (run,) = (tmp_path / "runs").iterdir()
    first = json.loads((run / "events.jsonl").read_text().splitlines()[0])
    assert first["payload"]["flows"] == ["triage"]
    (transcript,) = (run / "triage" / "llm").glob("triage_step-triage-intake-*.jsonl")
    system = json.loads(transcript.read_text().splitlines()[0])
    assert system["role"] == "system"
    assert system["content"].startswith(persona.strip() + "\n\n# Flow triage")
    assert not (run / "alpha").exists() and not (run / "spare").exists()
