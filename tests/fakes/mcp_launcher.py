"""Start a command as a child and wait for it, as ``npx`` does: the real server is a grandchild.

``python mcp_launcher.py [--setsid] -- COMMAND ARGS…``; with ``--setsid`` the child leaves
the launcher's process group and session (as a daemon would).
"""

from __future__ import annotations

import subprocess
import sys


def main(argv: list[str]) -> int:
    split = argv.index("--")
    child = subprocess.Popen(argv[split + 1 :], start_new_session="--setsid" in argv[:split])
    return child.wait()


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
