"""The studio serves nothing outside the runs dir, answers only loopback names, and changes
state only for its own page."""

from __future__ import annotations

import http.client
import os
import shutil
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from swarm_runtime.golden import golden_files
from tests.conftest import REPO
from tests.studio.conftest import LOCAL, Project

_WATCH: list[list[str]] = []


def _audit(event: str, args: tuple[Any, ...]) -> None:
    if _WATCH and event in ("open", "os.listdir", "os.scandir", "os.chdir") and args:
        path = args[0]
        if isinstance(path, str | bytes | os.PathLike):
            _WATCH[-1].append(os.fsdecode(path))


sys.addaudithook(_audit)


class FileWatch:
    """The paths the process opens or lists while it is on (the audit hook)."""

    def __enter__(self) -> list[str]:
        _WATCH.append([])
        return _WATCH[-1]

    def __exit__(self, *exc: object) -> None:
        _WATCH.pop()


@pytest.fixture
def fenced(tmp_path: Path, client_for: Any) -> Iterator[tuple[Any, Project, Path, str]]:
    """A project whose runs dir sits beside a secret that a traversal would reach."""
    project = Project(tmp_path / "project")
    run_id = project.run("stepwise-demo")
    secret = tmp_path / "project" / "swarm" / "etc"
    (secret / "receipts").mkdir(parents=True)
    (secret / "receipts" / "x").write_text("SECRET")
    (secret / "receipts" / "x.json").write_text('{"secret": true}')
    yield client_for(project.config()), project, secret, run_id


TRAVERSALS = (
    "/api/runs/..%2f..%2fetc/receipts/x",
    "/api/runs/..%2fetc/flows/receipts/steps/x",
    "/api/runs/run-x/flows/../../etc/receipts/x",
    "/api/runs/%2e%2e/events",
    "/api/runs/..%252f..%252fetc/events",
    "/api/runs/{run}/flows/..%2f..%2fetc/steps/x",
    "/api/runs/{run}/flows/stepwise-demo/steps/..%2f..%2f..%2fetc%2freceipts%2fx",
    "/api/runs/{run}/flows/stepwise-demo/steps/x%00",
    "/api/runs/{run}/flows/..%2fetc/steps/receipts",
    "/api/runs/%2Fetc%2Fpasswd",
    "/api/runs/{run}%2f..%2f..%2fetc/graph",
    "/api/compare?a=golden:..%2f..%2fswarm%2fetc&b={run}",
    "/api/compare?a=%2Fetc&b={run}",
    "/static/..%2f..%2f..%2fpyproject.toml",
    "/static/%2e%2e/app.py",
)


@pytest.mark.parametrize("template", TRAVERSALS)
def test_a_path_out_of_the_runs_dir_is_404_and_touches_nothing_outside(
    fenced: tuple[Any, Project, Path, str], template: str
) -> None:
    client, project, _, run_id = fenced
    with FileWatch() as touched:
        answer = client.get(template.format(run=run_id))
    assert answer.status_code == 404
    assert "SECRET" not in answer.text and "secret" not in answer.text
    runs_dir = str(project.runs_dir.resolve())
    outside = [p for p in touched if not os.path.realpath(p).startswith(runs_dir)]
    assert [p for p in outside if "etc" in p or "golden" in p] == []


def test_raw_dot_segments_on_the_wire_are_404(
    fenced: tuple[Any, Project, Path, str], live_studio: Any
) -> None:
    # A browser folds '..' away; a raw client sends it as it is.
    _, project, _, run_id = fenced
    server = live_studio(project.config())
    port = int(server.url.rsplit(":", 1)[1])
    for path in (
        "/api/runs/../../etc/receipts/x",
        f"/api/runs/{run_id}/flows/../../../etc/steps/receipts",
        "/static/../app.py",
    ):
        connection = http.client.HTTPConnection("127.0.0.1", port, timeout=30)
        connection.request("GET", path)
        answer = connection.getresponse()
        body = answer.read()
        connection.close()
        assert answer.status == 404, path
        assert b"SECRET" not in body


def test_symlinks_planted_in_the_runs_dir_are_not_followed(
    fenced: tuple[Any, Project, Path, str],
) -> None:
    client, project, secret, run_id = fenced
    planted = "run-20990101-000000-zzzzzz"
    (project.runs_dir / planted).symlink_to(secret.parent)
    run_dir = project.runs_dir / run_id
    (run_dir / "evil").symlink_to(secret)
    receipts = run_dir / "stepwise-demo" / "receipts"
    (receipts / "read_request-x.json").symlink_to(secret / "receipts" / "x.json")
    assert client.get(f"/api/runs/{planted}").status_code == 404
    assert client.get(f"/api/runs/{planted}/events").status_code == 404
    assert planted not in client.get("/api/runs").text
    assert client.get(f"/api/runs/{run_id}/flows/evil/steps/receipts").status_code == 404
    step = client.get(f"/api/runs/{run_id}/flows/stepwise-demo/steps/read_request")
    assert step.status_code == 200 and "secret" not in step.text
    compared = client.get("/api/compare", params={"a": run_id, "b": run_id})
    assert compared.status_code == 200 and "SECRET" not in compared.text


def test_a_planted_meta_json_symlink_is_not_read(
    fenced: tuple[Any, Project, Path, str],
) -> None:
    client, project, secret, run_id = fenced
    meta = project.runs_dir / run_id / "meta.json"
    meta.unlink()
    (secret / "meta.json").write_text(
        '{"status": "secret", "flows": ["secret"], "error": "SECRET"}'
    )
    meta.symlink_to(secret / "meta.json")
    for path in ("/api/runs", f"/api/runs/{run_id}", "/api/facets"):
        answer = client.get(path)
        assert answer.status_code == 200 and "secret" not in answer.text.lower(), path


def test_a_golden_run_whose_meta_json_is_a_symlink_says_so_and_reads_nothing_outside(
    tmp_path: Path, client_for: Any
) -> None:
    golden = tmp_path / "golden"
    shutil.copytree(REPO / "golden" / "signal", golden / "claims")
    secret = tmp_path / "elsewhere"
    secret.mkdir()
    (secret / "meta.json").write_text('{"status": "SECRET", "flows": ["SECRET"], "error": "x"}')
    (golden / "claims" / "meta.json").unlink()
    (golden / "claims" / "meta.json").symlink_to(secret / "meta.json")
    client = client_for(Project(tmp_path / "project").config(golden_dir=golden))
    base = "/api/runs/golden:claims"
    with FileWatch() as touched:
        answers = {path: client.get(path) for path in (base, f"{base}/graph", f"{base}/events")}
    for path, answer in answers.items():
        assert answer.status_code == 200, (path, answer.text)
        assert "SECRET" not in answer.text, path
    summary = answers[base].json()
    assert summary["status"] == "unreadable" and not summary["live"]
    assert summary["error"].startswith("meta.json: is a symlink")
    assert [path for path in touched if str(secret) in path] == []


def test_golden_files_skip_a_planted_symlink(tmp_path: Path) -> None:
    run = tmp_path / "run"
    run.mkdir()
    (run / "meta.json").write_text("{}")
    (tmp_path / "secret.json").write_text('{"secret": 1}')
    (run / "planted.json").symlink_to(tmp_path / "secret.json")
    assert set(golden_files(run)) == {"meta.json"}


def test_only_loopback_names_are_answered(fenced: tuple[Any, Project, Path, str]) -> None:
    client, *_ = fenced
    for host in ("127.0.0.1:5000", "LOCALHOST:5000", "[::1]:5000", "localhost", "127.0.0.1"):
        assert client.get("/api/runs", headers={"Host": host}).status_code == 200, host
    for host in (
        "attacker.example:5000",
        "localhost.attacker.example",
        "127.0.0.1.nip.io",
        "10.1.2.3:80",
        "[::2]:5000",
        "",
    ):
        rebound = client.get("/api/runs", headers={"Host": host})
        assert rebound.status_code == 400, host
        assert rebound.headers["x-frame-options"] == "DENY"
        assert "run-" not in rebound.text


def test_a_name_the_studio_is_given_is_answered(tmp_path: Path, client_for: Any) -> None:
    from swarm_runtime.studio.server import host_names

    project = Project(tmp_path / "project")
    project.run("stepwise-demo")
    names = host_names("192.168.7.9", ("Studio.LAN", "fd00::5"))
    client = client_for(project.config(allowed_hosts=names))
    for host in ("studio.lan:5000", "192.168.7.9:5000", "[fd00::5]:5000", "localhost:5000"):
        answer = client.get("/api/runs", headers={"Host": host})
        assert answer.status_code == 200 and "run-" in answer.text, host
    assert client.get("/api/runs", headers={"Host": "192.168.7.10"}).status_code == 400


def test_the_names_a_studio_answers_to_follow_its_address() -> None:
    import socket

    from swarm_runtime.studio.server import host_names

    assert host_names("127.0.0.1") == ("localhost", "127.0.0.1", "[::1]")
    assert host_names("0.0.0.0", ("studio.lan",)) == (
        "localhost",
        "127.0.0.1",
        "[::1]",
        "studio.lan",
        socket.gethostname().lower(),
    )
    assert "box.example" in host_names("box.example")
    assert "[2001:db8::1]" in host_names("2001:db8::1")
    assert host_names("::") == host_names("0.0.0.0")  # every address: no Host names it


@pytest.mark.parametrize("name", ["*", "*.lan", "studio lan", "a/b", "-x"])
def test_a_name_that_is_no_host_name_is_refused(name: str) -> None:
    from swarm_runtime.errors import SwarmUsageError
    from swarm_runtime.studio.server import host_names

    with pytest.raises(SwarmUsageError, match="not a host name or IP address"):
        host_names("127.0.0.1", (name,))


def test_requests_from_other_sites_are_refused_but_a_link_to_the_page(
    fenced: tuple[Any, Project, Path, str],
) -> None:
    client, _, _, run_id = fenced
    for site in ("cross-site", "same-site"):
        for path in ("/api/runs", f"/api/runs/{run_id}/stream", "/static/studio.js"):
            answer = client.get(path, headers={"Sec-Fetch-Site": site})
            assert answer.status_code == 403, (site, path)
    link = client.get("/", headers={"Sec-Fetch-Site": "cross-site", "Sec-Fetch-Mode": "navigate"})
    assert link.status_code == 200
    own = client.get("/api/runs", headers={"Sec-Fetch-Site": "same-origin"})
    assert own.status_code == 200


def test_state_changes_need_the_studios_own_origin(
    fenced: tuple[Any, Project, Path, str],
) -> None:
    client, project, _, run_id = fenced
    before = project.runs()
    body = {"flows": ["stepwise-demo"]}
    for headers in (
        {},
        {"Origin": "http://attacker.example"},
        {"Origin": "null"},
        {"Origin": "http://127.0.0.1:5001"},
        {"Sec-Fetch-Site": "cross-site"},
    ):
        answer = client.post("/api/runs", json=body, headers=headers)
        assert answer.status_code == 403, headers
        assert any(
            text in answer.json()["error"]
            for text in ("Origin: http://127.0.0.1:5000", "requests from other sites")
        )
        assert client.post(f"/api/runs/{run_id}/stop", headers=headers).status_code == 403
    assert project.runs() == before
    form = client.post(
        "/api/runs", content="flows=signal", headers={"Origin": LOCAL, "Content-Type": "text/plain"}
    )
    assert form.status_code == 400 and "as JSON" in form.json()["error"]
    same = client.post("/api/runs", json=body, headers={"Sec-Fetch-Site": "same-origin"})
    assert same.status_code == 201


def test_a_planted_fifo_or_symlink_for_an_event_log_is_no_log(
    fenced: tuple[Any, Project, Path, str],
) -> None:
    client, project, secret, run_id = fenced
    log = project.runs_dir / run_id / "events.jsonl"
    log.unlink()
    os.mkfifo(log)  # opening it for reading would block a worker for ever
    assert client.get(f"/api/runs/{run_id}/events").json()["events"] == []
    assert client.get(f"/api/runs/{run_id}/graph").status_code == 200
    log.unlink()
    log.symlink_to(secret / "receipts" / "x.json")
    events = client.get(f"/api/runs/{run_id}/events")
    assert events.json()["events"] == [] and "secret" not in events.text


def test_a_lone_surrogate_in_a_run_file_is_served_escaped(
    fenced: tuple[Any, Project, Path, str],
) -> None:
    client, project, _, run_id = fenced
    llm = project.runs_dir / run_id / "stepwise-demo" / "llm"
    (transcript,) = llm.glob("read_request-*.jsonl")
    transcript.write_text('{"role": "assistant", "content": "half \\ud83d of a pair"}\n')
    step = client.get(f"/api/runs/{run_id}/flows/stepwise-demo/steps/read_request")
    assert step.status_code == 200
    assert step.json()["transcript"] == [{"role": "assistant", "content": "half \ud83d of a pair"}]
