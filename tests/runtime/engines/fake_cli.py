"""A stand-in for the Claude Code CLI that misbehaves on demand (FAKE_CLI_CASE).

Run as a script by the CLI engine tests. It writes its pid (and its child's) to
FAKE_CLI_PIDS, so a test can check that the whole process group was ended; a daemon
(``daemon``) also writes the pid of the process it was reparented to, to
FAKE_CLI_PIDS.parent. ``tools`` acts as Claude Code calling MCP tools: it notes what it was
given (its argv, the MCP config file as it found it) in FAKE_CLI_SEEN and reports the
calls FAKE_CLI_CALLS lists (``[[name, input, output], …]``) as a stream does.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time


def emit(value: object) -> None:
    sys.stdout.write(json.dumps(value) + "\n")
    sys.stdout.flush()


INIT = {"type": "system", "subtype": "init", "model": "claude-fake", "session_id": "s"}


def result(text: str, **extra: object) -> dict[str, object]:
    return {
        "type": "result",
        "subtype": "success",
        "is_error": False,
        "result": text,
        "total_cost_usd": 0.0125,
        "usage": {"input_tokens": 100, "output_tokens": 7},
        **extra,
    }


def hang() -> None:
    while True:
        time.sleep(3600)


def start_daemon() -> tuple[int, int]:
    """A daemon as a tool starts one: fork, setsid, fork again, streams on /dev/null.

    Its pid and its parent once the middle process is gone (the subreaper that took it,
    or init), told on a pipe once it knows: no waiting on a clock.
    """
    read, write = os.pipe()
    first = os.fork()
    if first == 0:
        os.close(read)
        os.setsid()
        parent_r, parent_w = os.pipe()
        if os.fork() == 0:
            os.close(parent_w)
            os.read(parent_r, 1)  # end of file: the middle process has exited
            devnull = os.open(os.devnull, os.O_RDWR)
            for fd in (0, 1, 2):
                os.dup2(devnull, fd)
            os.write(write, f"{os.getpid()} {os.getppid()}".encode())
            os.close(write)
            hang()
        os._exit(0)
    os.close(write)
    os.waitpid(first, 0)
    with os.fdopen(read, "rb") as pipe:
        pid, parent = pipe.read().split()
    return int(pid), int(parent)


def tool_calls() -> None:
    argv = sys.argv[1:]
    seen: dict[str, object] = {"argv": argv}
    if "--mcp-config" in argv:
        path = argv[argv.index("--mcp-config") + 1]
        seen.update(config_path=path, config_mode=os.stat(path).st_mode & 0o777)
        with open(path, encoding="utf-8") as handle:
            seen["config"] = json.load(handle)
    with open(os.environ["FAKE_CLI_SEEN"], "w", encoding="utf-8") as handle:
        json.dump(seen, handle)
    for index, (name, tool_input, output) in enumerate(json.loads(os.environ["FAKE_CLI_CALLS"])):
        block = {"type": "tool_use", "id": f"toolu_fake_{index}", "name": name, "input": tool_input}
        emit({"type": "assistant", "message": {"content": [block]}})
        answer = {"type": "tool_result", "tool_use_id": block["id"], "content": output}
        emit({"type": "user", "message": {"content": [answer]}})


def main() -> int:
    case = os.environ.get("FAKE_CLI_CASE", "ok")
    prompt = sys.stdin.read()
    pids = [os.getpid()]
    if case == "ignores_sigterm":
        signal.signal(signal.SIGTERM, signal.SIG_IGN)
        child = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(3600)"])
        pids.append(child.pid)
    if case == "setsid_child":
        # A daemon of its own session, out of reach of the group kill, holding stdout and
        # stderr open after the CLI itself has answered and exited.
        child = subprocess.Popen(
            [sys.executable, "-c", "import time; time.sleep(3600)"], start_new_session=True
        )
        pids.append(child.pid)
    if case == "daemon":
        daemon, parent = start_daemon()
        pids.append(daemon)
        with open(os.environ["FAKE_CLI_PIDS"] + ".parent", "w", encoding="utf-8") as handle:
            handle.write(str(parent))
    with open(os.environ["FAKE_CLI_PIDS"], "w", encoding="utf-8") as handle:
        handle.write(" ".join(map(str, pids)))
    emit(INIT)
    if case == "tools":
        tool_calls()
    if case in ("ok", "echo", "setsid_child", "daemon", "tools"):
        # echo: answer with the value of the variable FAKE_CLI_ECHO names (a leaky tool).
        echoed = os.environ.get(os.environ.get("FAKE_CLI_ECHO", ""), "")
        text = f"read {len(prompt)} chars" + (f"; my env says {echoed}" if case == "echo" else "")
        emit(
            {
                "type": "assistant",
                "message": {"model": "claude-fake", "content": [{"type": "text", "text": text}]},
            }
        )
        emit(result(text))
        return 0
    if case == "exit_3":
        sys.stderr.write("fatal: something broke\n")
        return 3
    if case == "malformed":
        sys.stdout.write("this is not json\n")
        sys.stdout.flush()
        hang()
    if case == "no_result":
        emit({"type": "assistant", "message": {"content": [{"type": "text", "text": "half"}]}})
        return 0
    if case == "overloaded":
        emit(result("API Error: 529 overloaded", is_error=True, api_error_status=529))
        return 1
    if case in ("timeout", "ignores_sigterm"):
        hang()
    raise SystemExit(f"unknown FAKE_CLI_CASE {case!r}")


if __name__ == "__main__":
    sys.exit(main())
