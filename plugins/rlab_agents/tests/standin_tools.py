"""Stand-ins for the aider, claude and codex executables, written into a test's bin folder.

Each parses the real tool's non-interactive flags (an unknown flag fails as it would with
the real tool), reads the instructions, edits the toy candidate in its working directory,
writes ``HYPOTHESIS.md`` and prints a summary in the tool's own format. What it does is
chosen by ``STANDIN_BEHAVIOUR`` (passed through the agent's ``env`` option); each call
appends its argv, environment, working directory and instructions to ``STANDIN_RECORD``.
"""

from __future__ import annotations

import stat
import sys
from pathlib import Path

SCRIPT = r'''#!@PYTHON@
"""Stand-in for @TOOL@ (rlab tests)."""
import argparse, json, os, subprocess, sys, time
from pathlib import Path

TOOL = "@TOOL@"
BEHAVIOUR = os.environ.get("STANDIN_BEHAVIOUR", "improve")


def parse():
    parser = argparse.ArgumentParser(prog=TOOL)
    if TOOL == "aider":
        parser.add_argument("--message-file", "-f", required=True)
        for flag in ("--yes-always", "--no-git", "--no-auto-commits", "--no-gitignore",
                     "--no-pretty", "--no-stream", "--no-fancy-input", "--no-check-update",
                     "--no-show-release-notes", "--no-show-model-warnings", "--no-analytics",
                     "--no-restore-chat-history", "--no-detect-urls",
                     "--no-suggest-shell-commands"):
            parser.add_argument(flag, action="store_true")
        parser.add_argument("--chat-history-file")
        parser.add_argument("--input-history-file")
        parser.add_argument("--model")
        parser.add_argument("--edit-format")
        parser.add_argument("files", nargs="*")
        args = parser.parse_args()
        assert args.yes_always and args.no_git, "aider would ask questions or use git"
        return args, Path(args.message_file).read_text()
    if TOOL == "claude":
        parser.add_argument("-p", "--print", dest="prompt", required=True)
        parser.add_argument("--permission-mode", required=True,
                            choices=["acceptEdits", "bypassPermissions", "default", "plan"])
        parser.add_argument("--output-format", default="text",
                            choices=["text", "json", "stream-json"])
        parser.add_argument("--mcp-config", nargs="+")
        parser.add_argument("--allowedTools", nargs="+")
        parser.add_argument("--model")
        args = parser.parse_args()
    else:
        sub = parser.add_subparsers(dest="command", required=True)
        run = sub.add_parser("exec")
        run.add_argument("--sandbox", "-s", choices=["read-only", "workspace-write",
                                                      "danger-full-access"])
        run.add_argument("--skip-git-repo-check", action="store_true")
        run.add_argument("--model", "-m")
        run.add_argument("prompt")
        args = parser.parse_args()
        assert args.sandbox == "workspace-write", "codex exec is read-only by default"
        assert args.skip_git_repo_check, "codex exec refuses a folder outside git"
    assert "RLAB_TASK.md" in args.prompt, "the prompt must point at the instruction file"
    return args, Path("RLAB_TASK.md").read_text()


def edit(anchor, replacement, file="main.py"):
    path = Path(file)
    text = path.read_text()
    assert text.count(anchor) == 1, f"{anchor!r} not once in {file}"
    path.write_text(text.replace(anchor, replacement))


def act(task):
    """Change the candidate; return (hypothesis file text or None, summary)."""
    main = Path("main.py").read_text()
    if BEHAVIOUR == "fail":
        print("error: the model refused the request: 401 invalid api key", file=sys.stderr)
        sys.exit(3)
    if BEHAVIOUR == "timeout":
        child = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(60)"])
        Path(os.environ["STANDIN_CHILD_PID"]).write_text(str(child.pid))
        print("thinking...", flush=True)
        time.sleep(60)
    if BEHAVIOUR == "nochange":
        return "Nothing worth changing.\n", "I looked but changed nothing."
    if BEHAVIOUR == "crash-then-fix":
        if "## Repair" in task:
            edit("raise RuntimeError('stand-in bug')\n", "")
            return None, "Removed the stray raise that crashed the program."
        edit("SLOPE = 1.0\n", "SLOPE = 3.0\n")
        edit("# extra behaviour\n", "# extra behaviour\nraise RuntimeError('stand-in bug')\n")
        return "Raise the slope to 3 (with a bug).\n", "Raised the slope."
    if BEHAVIOUR == "outside":
        edit("SLOPE = 1.0\n", "SLOPE = 3.0\n")
        Path("data.csv").write_text("x,y\n1,4\n")
        return "Raise the slope and cache the data.\n", "Raised the slope, wrote data.csv."
    if BEHAVIOUR == "escape":
        edit("SLOPE = 1.0\n", "SLOPE = 3.0\n")
        Path("../escape.py").write_text("print('escaped')\n")
        return "Raise the slope and leave a helper outside.\n", "Wrote ../escape.py."
    if BEHAVIOUR == "delete":
        edit("SLOPE = 1.0\n", "SLOPE = 3.0\n")
        Path("helper.py").unlink()
        return "Raise the slope and drop the helper.\n", "Deleted helper.py."
    if BEHAVIOUR == "no-hypothesis":
        edit("SLOPE = 1.0\n", "SLOPE = 3.0\n")
        return None, "Raised SLOPE to 3.0 so the line matches the data.\nDone."
    # "improve": slope first, then intercept, then nothing is left
    if "SLOPE = 1.0\n" in main:
        edit("SLOPE = 1.0\n", "SLOPE = 3.0\n")
        return ("# Hypothesis\n\nRaise the slope to 3 because the data follow y = 3x + 1.\n\n"
                "The seed uses slope 1, far from the trend.\n",
                "Raised SLOPE from 1.0 to 3.0.")
    if "INTERCEPT = 0.0\n" in main:
        edit("INTERCEPT = 0.0\n", "INTERCEPT = 1.0\n")
        return "Set the intercept to 1 to remove the remaining offset.\n", "Set INTERCEPT to 1.0."
    return None, "Nothing left to improve."


def main():
    args, task = parse()
    record = os.environ.get("STANDIN_RECORD")
    if record:
        with open(record, "a") as handle:
            handle.write(json.dumps({"tool": TOOL, "argv": sys.argv[1:], "cwd": os.getcwd(),
                                     "env": dict(os.environ), "task": task}) + "\n")
    hypothesis, summary = act(task)
    if hypothesis is not None:
        Path("HYPOTHESIS.md").write_text(hypothesis)
    if TOOL == "aider":
        print("Aider v0.0-standin\nApplied edit to main.py\n" + summary)
        print("Tokens: 1.2k sent, 56 received. Cost: $0.0021 message, $0.0042 session.")
    elif TOOL == "claude" and args.output_format == "json":
        print(json.dumps({"type": "result", "subtype": "success", "is_error": False,
                          "result": summary, "total_cost_usd": 0.0125,
                          "usage": {"input_tokens": 900, "cache_read_input_tokens": 100,
                                    "output_tokens": 80}}))
    else:
        print("[codex] working...", file=sys.stderr)
        print(summary)


main()
'''

TOOLS = ("aider", "claude", "codex")


def write_standins(folder: Path) -> dict[str, Path]:
    """Write the three stand-ins into ``folder``; return their paths by tool name."""
    folder.mkdir(parents=True, exist_ok=True)
    paths = {}
    for tool in TOOLS:
        path = folder / tool
        path.write_text(SCRIPT.replace("@PYTHON@", sys.executable).replace("@TOOL@", tool))
        path.chmod(path.stat().st_mode | stat.S_IXUSR | stat.S_IXGRP | stat.S_IXOTH)
        paths[tool] = path
    return paths
