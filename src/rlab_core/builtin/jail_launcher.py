"""The small program that starts a candidate where bubblewrap does not: run as a script.

The local sandbox runs it with ``python -I -S`` (standard library only, no site; imported
rather than run as a script, so its compiled form is reused: it starts in about 15 ms) as
``jail_launcher MODE ...``. Modes:

``reap SUPERVISOR_PID [--lc-ctype V] -- COMMAND...`` (isolation ``none``)
    Becomes a child subreaper, starts the candidate, waits for it, then kills every
    descendant left (a ``setsid`` + double-fork grandchild is re-parented here, so none
    escapes) and exits with the candidate's status. SIGTERM — from the supervisor's kill or
    from the supervisor's death (``PR_SET_PDEATHSIG``) — kills them all and exits.

``guard SUPERVISOR_PID [--lc-ctype V] -- COMMAND...`` (in front of ``unshare``)
    Arms ``PR_SET_PDEATHSIG`` (SIGKILL) and execs the command, so that it dies with the
    supervisor; ``unshare --kill-child`` then takes the pid namespace along.

``cover [OPTIONS] -- COMMAND...`` (inside ``unshare``'s mount namespace, as uid 0 there)
    Sets up the candidate's view of the files with :mod:`jail_covers` (host read-only,
    private paths covered, its own folders re-exposed, no capability left) and execs the
    command. Any failure exits 126 before the candidate runs.

Python coerces a C locale to ``LC_CTYPE=C.UTF-8`` in its own environment at start;
``--lc-ctype`` gives the value the candidate must see (absent: unset), so the launcher
passes on exactly the environment it was given.
"""

from __future__ import annotations

import _signal as signal  # not ``signal``: its enum wrappers cost 4 ms of every start
import ctypes
import os
import sys

PR_SET_PDEATHSIG = 1
PR_SET_CHILD_SUBREAPER = 36

libc = ctypes.CDLL(None, use_errno=True)


def fail(message: str, code: int = 126) -> None:
    """Say why the candidate cannot start (into its log) and exit before it runs."""
    os.write(2, f"rlab jail launcher: {message}\n".encode(errors="replace"))
    os._exit(code)


def prctl(option: int, arg: int = 0) -> None:
    """``prctl(2)``; raises OSError on failure."""
    if libc.prctl(option, ctypes.c_ulong(arg), 0, 0, 0) != 0:
        err = ctypes.get_errno()
        raise OSError(err, os.strerror(err))


def split_args(args: list[str]) -> tuple[list[str], list[str], dict[str, str]]:
    """Options before ``--``, the command after it, and the environment to pass on."""
    if "--" not in args:
        fail("usage: MODE [options] -- COMMAND...", 2)
    cut = args.index("--")
    options, command = args[:cut], args[cut + 1 :]
    env = dict(os.environ)
    env.pop("LC_CTYPE", None)
    if "--lc-ctype" in options:
        at = options.index("--lc-ctype")
        env["LC_CTYPE"] = options[at + 1]
        del options[at : at + 2]
    if not command:
        fail("no command to run", 2)
    return options, command, env


def exec_command(command: list[str], env: dict[str, str]) -> None:
    """Replace this process with the command (exit 127 when it cannot be started)."""
    try:
        os.execvpe(command[0], command, env)
    except OSError as exc:
        fail(f"cannot start {command[0]}: {exc.strerror}", 127)


def arm_parent_death(supervisor: int, sig: int) -> None:
    """Get ``sig`` when the parent dies; exit now if it is already gone."""
    prctl(PR_SET_PDEATHSIG, sig)
    if os.getppid() != supervisor:  # it died before the signal was armed
        os._exit(137)


# -- reap ------------------------------------------------------------------------------


def children() -> list[int]:
    """This process's direct children (orphans re-parented here included)."""
    me = os.getpid()
    try:
        with open(f"/proc/{me}/task/{me}/children") as handle:
            return [int(pid) for pid in handle.read().split()]
    except OSError:  # a kernel without CONFIG_PROC_CHILDREN: scan /proc
        found = []
        for entry in os.listdir("/proc"):
            if entry.isdigit():
                try:
                    with open(f"/proc/{entry}/stat") as handle:
                        stat = handle.read()
                except OSError:
                    continue
                if int(stat.rpartition(")")[2].split()[1]) == me:
                    found.append(int(entry))
        return found


def kill_all() -> None:
    """SIGKILL every descendant until none is left (each one's orphans come here next)."""
    while True:
        for pid in children():
            try:  # noqa: SIM105 - contextlib would add its imports to every start
                os.kill(pid, signal.SIGKILL)
            except ProcessLookupError:
                pass
        try:
            os.waitpid(-1, 0)
        except ChildProcessError:
            return


def exit_like(status: int) -> None:
    """Exit the way the candidate did: its exit code, or death by the same signal."""
    if os.WIFSIGNALED(status):
        sig = os.WTERMSIG(status)
        signal.signal(sig, signal.SIG_DFL)
        os.kill(os.getpid(), sig)
        os._exit(128 + sig)
    os._exit(os.waitstatus_to_exitcode(status))


def reap(args: list[str]) -> None:
    """Run the candidate as a child; no descendant outlives it."""
    options, command, env = split_args(args)
    supervisor = int(options[0])

    def stop(signum: int, frame: object) -> None:
        signal.signal(signal.SIGTERM, signal.SIG_IGN)
        kill_all()
        os._exit(128 + signal.SIGKILL)

    signal.signal(signal.SIGTERM, stop)
    arm_parent_death(supervisor, signal.SIGTERM)
    prctl(PR_SET_CHILD_SUBREAPER, 1)
    launcher = os.getpid()
    pid = os.fork()
    if pid == 0:
        signal.signal(signal.SIGTERM, signal.SIG_DFL)
        arm_parent_death(launcher, signal.SIGKILL)
        exec_command(command, env)
    while True:
        done, status = os.waitpid(-1, 0)  # reaps orphans as they end, too
        if done == pid:
            break
    signal.signal(signal.SIGTERM, signal.SIG_IGN)
    kill_all()
    exit_like(status)


def guard(args: list[str]) -> None:
    """Exec the command with a parent-death SIGKILL armed."""
    options, command, env = split_args(args)
    arm_parent_death(int(options[0]), signal.SIGKILL)
    exec_command(command, env)


# -- cover -----------------------------------------------------------------------------


def cover(args: list[str]) -> None:
    """Set up the candidate's view of the files (:mod:`jail_covers`), then exec it."""
    import jail_covers  # only this mode needs it: the others start without its imports

    options, command, env = split_args(args)
    try:
        jail_covers.set_up(jail_covers.parse_cover(options))
    except ValueError as exc:
        fail(str(exc), 2)
    except OSError as exc:
        fail(f"cannot set up the candidate's files: {exc.strerror or exc}")
    exec_command(command, env)


def main() -> None:
    """Dispatch on the mode."""
    if len(sys.argv) < 2:
        fail("usage: jail_launcher.py reap|guard|cover ...", 2)
    modes = {"reap": reap, "guard": guard, "cover": cover}
    mode = modes.get(sys.argv[1])
    if mode is None:
        fail(f"unknown mode {sys.argv[1]}", 2)
    mode(sys.argv[2:])


if __name__ == "__main__":
    main()
