"""The hostile attacks as data: each a short program a candidate runs, and its judge.

Every program starts with :data:`PRELUDE`: the output and cache folders, the site (paths
of what it must not reach) and ``attempt``, which turns an action into "allowed" or the
name of the exception that stopped it.
"""

from __future__ import annotations

import textwrap
from dataclasses import dataclass

from rlab_core.testing.hostile_judges import (
    Judge,
    all_denied,
    killed_by,
    no_private_bytes,
    refused_naming,
    victim_unchanged,
)
from rlab_core.testing.hostile_site import LIMIT_MB


@dataclass(frozen=True)
class Attack:
    """One attack: its name, the program a candidate runs, and how it is judged."""

    name: str
    program: str
    judge: Judge
    needs_hiding: bool = False
    limit: str | None = None  # "memory" or "disk": run with a small limit of that kind


PRELUDE = """\
import json, os, pathlib, socket, sys, time
OUT = pathlib.Path(os.environ["RLAB_OUTPUT_DIR"])
CACHE = pathlib.Path(os.environ["RLAB_CACHE_DIR"])
SITE = json.loads(pathlib.Path("site.json").read_text())
def attempt(action):
    try:
        result = action()
        return "allowed" + ("" if result is None else f": {str(result)[:60]}")
    except BaseException as exc:
        return type(exc).__name__
"""


def all_attacks() -> list[Attack]:
    """Every attack, in the order the suite runs them."""
    link = "symbolic link"
    return [
        Attack(
            "symlink-to-private-labels",
            "os.symlink(SITE['labels'], OUT / 'val_predictions.npy')",
            refused_naming("val_predictions.npy", link),
        ),
        Attack(
            "relative-symlink-to-private",
            "os.symlink(os.path.relpath(SITE['labels'], OUT), OUT / 'test_predictions.npy')",
            refused_naming("test_predictions.npy", link),
        ),
        Attack(
            "symlinked-folder",
            "(OUT / 'preds').mkdir()\nos.symlink(SITE['private'], OUT / 'preds' / 'all')",
            refused_naming("preds/all", link),
        ),
        Attack(
            "dangling-symlink",
            "os.symlink('/nonexistent/rlab/labels.csv', OUT / 'submission.csv')",
            refused_naming("submission.csv", link),
        ),
        Attack(
            "host-file-as-artifact",
            "(OUT / 'val_predictions.npy').write_bytes(b'0')\n"
            "os.symlink('/etc/passwd', OUT / 'notes.txt')",
            refused_naming("notes.txt", link),
        ),
        Attack(
            "link-named-like-a-grader-file",
            "os.symlink(SITE['victim'], OUT / 'grading_report.json')",
            victim_unchanged,
        ),
        Attack(
            "hard-link-to-private-labels",
            "state = attempt(lambda: os.link(SITE['labels'], OUT / 'val_predictions.npy'))\n"
            "(OUT / 'attempt.txt').write_text(state)",
            no_private_bytes,
        ),
        Attack(
            "hard-link-inside-outputs",
            "(OUT / 'a.csv').write_text('x')\nos.link(OUT / 'a.csv', OUT / 'b.csv')",
            refused_naming("a.csv", "hard link"),
        ),
        Attack(
            "fifo-named-like-predictions",
            "os.mkfifo(OUT / 'val_predictions.csv')",
            refused_naming("val_predictions.csv", "fifo"),
        ),
        Attack(
            "sparse-file-past-the-outputs-cap",
            "with open(OUT / 'val_predictions.npy', 'wb') as f:\n    f.truncate(2 * 2**30)",
            refused_naming("val_predictions.npy", "MiB limit"),
        ),
        Attack(
            "output-folder-swapped-for-a-link",
            "import shutil\n"
            "attempt(lambda: shutil.rmtree(OUT))\n"
            "attempt(lambda: os.rename(OUT, OUT.with_name('gone')))\n"
            "attempt(lambda: os.symlink(SITE['private'], OUT))",
            no_private_bytes,
        ),
        Attack(
            "read-hidden-paths",
            "r = {n: attempt(lambda p=p: pathlib.Path(p).read_bytes()[:8]) for n, p in "
            "[('labels', SITE['labels']), ('run_folder', SITE['journal'])]}\n"
            "r['list_private'] = attempt(lambda: os.listdir(SITE['private']))\n"
            "(OUT / 'report.json').write_text(json.dumps(r))",
            all_denied,
            needs_hiding=True,
        ),
        Attack(
            "proc-environ-of-other-processes",
            "found = []\n"
            "for pid in os.listdir('/proc'):\n"
            "    if pid.isdigit() and int(pid) != os.getpid():\n"
            "        try:\n"
            "            if SITE['secret'].encode() in open(f'/proc/{pid}/environ', 'rb').read():\n"
            "                found.append(pid)\n"
            "        except OSError:\n"
            "            pass\n"
            "r = {'environ': 'allowed: ' + ','.join(found) if found else 'none visible'}\n"
            "(OUT / 'report.json').write_text(json.dumps(r))",
            all_denied,
            needs_hiding=True,
        ),
        Attack(
            "network-and-host-sockets",
            "def tcp():\n"
            "    socket.create_connection(('127.0.0.1', SITE['port']), timeout=2).close()\n"
            "def unix():\n"
            "    s = socket.socket(socket.AF_UNIX)\n"
            "    s.settimeout(2)\n"
            "    s.connect(SITE['unix_socket'])\n"
            "    s.close()\n"
            "r = {'tcp': attempt(tcp), 'unix_socket': attempt(unix)}\n"
            "r['write_outside'] = attempt(lambda: pathlib.Path(SITE['host'], 'planted.txt')"
            ".write_text('x'))\n"
            "(OUT / 'report.json').write_text(json.dumps(r))",
            all_denied,
            needs_hiding=True,
        ),
        Attack(
            "detached-grandchild",
            "if os.fork() == 0:\n"
            "    os.setsid()\n"
            "    if os.fork() == 0:\n"
            "        beat = CACHE / 'heartbeat'\n"
            "        for i in range(400):\n"
            "            beat.write_text(str(i))\n"
            "            time.sleep(0.05)\n"
            "        os._exit(0)\n"
            "    os._exit(0)\n"
            "time.sleep(0.5)\n"
            "(OUT / 'parent.txt').write_text('done')",
            lambda o: (True, "judged by the heartbeat"),
        ),
        Attack(
            "tmpfs-memory-hog",
            "held = 0\n"
            "for folder in ('/tmp', '/dev/shm'):\n"
            "    try:\n"
            "        with open(os.path.join(folder, 'hog'), 'wb') as f:\n"
            "            for _ in range(LIMIT // 8 + 4):\n"
            "                f.write(b'x' * 8 * 2**20)\n"
            "                f.flush()\n"
            "                held += 8\n"
            "    except OSError:\n"
            "        pass\n"
            "time.sleep(3)\n"
            "(OUT / 'report.json').write_text(json.dumps({'held_mb': held}))",
            killed_by("memory"),
            needs_hiding=True,
            limit="memory",
        ),
        Attack(
            "disk-flood",
            "held = 0\n"
            "try:\n"
            "    with open(OUT / 'flood.bin', 'wb') as f:\n"
            "        for _ in range(4 * LIMIT // 4):\n"
            "            f.write(os.urandom(4 * 2**20))\n"
            "            f.flush()\n"
            "            held += 4\n"
            "            time.sleep(0.02)\n"
            "except OSError:\n"
            "    pass\n"
            "time.sleep(3)\n"
            "(OUT / 'report.json').write_text(json.dumps({'held_mb': held}))",
            killed_by("disk"),
            limit="disk",
        ),
    ]


ATTACK_NAMES = tuple(a.name for a in all_attacks())


def attack_program(attack: Attack) -> str:
    """The full program a candidate runs for ``attack``: the prelude, its limit, the attack."""
    limit = LIMIT_MB.get(attack.limit or "", 0)
    return PRELUDE + f"LIMIT = {limit}\n" + textwrap.dedent(attack.program) + "\n"
