"""The ``cover`` mode of :mod:`jail_launcher`: the candidate's view of the files at netns.

Run as uid 0 of ``unshare``'s user or mount namespace, before the candidate: makes every
mount of the host read-only (a candidate that is root in here changes nothing outside its
own folders), covers paths (``--hide``: folders with a tmpfs made read-only, files with
``/dev/null``), mounts fresh tmpfs capped at ``--size`` (``--tmp``), re-exposes what the
candidate needs even where it lies under a cover (``--ro``, ``--rw``: opened before covering,
bind-mounted from ``/proc/self/fd`` after), covers again the hidden paths a re-exposure
brought back, changes to ``--chdir``, then drops every capability from every set and sets
no_new_privs, so the covers cannot be unmounted. Standard library only, like the launcher.
"""

from __future__ import annotations

import ctypes
import os

PR_CAPBSET_DROP = 24
PR_SET_NO_NEW_PRIVS = 38
PR_CAP_AMBIENT, PR_CAP_AMBIENT_CLEAR_ALL = 47, 4
MS_RDONLY, MS_NOSUID, MS_NODEV, MS_NOEXEC = 1, 2, 4, 8
MS_REMOUNT, MS_BIND, MS_REC, MS_PRIVATE = 32, 4096, 16384, 1 << 18
MS_NOATIME, MS_NODIRATIME, MS_RELATIME = 1024, 2048, 1 << 21
#: statvfs f_flag bit -> mount flag; a remount must keep the flags a user namespace locks
ST_TO_MS = {2: MS_NOSUID, 4: MS_NODEV, 8: MS_NOEXEC, 1024: MS_NOATIME, 2048: MS_NODIRATIME}
ST_RELATIME = 4096
LINUX_CAPABILITY_VERSION_3 = 0x20080522

libc = ctypes.CDLL(None, use_errno=True)


def prctl(option: int, arg: int = 0) -> None:
    """``prctl(2)``; raises OSError on failure."""
    if libc.prctl(option, ctypes.c_ulong(arg), 0, 0, 0) != 0:
        err = ctypes.get_errno()
        raise OSError(err, os.strerror(err))


def mount(
    source: str | None, target: str, fstype: str | None, flags: int, data: str | None
) -> None:
    """``mount(2)``; raises OSError naming the target."""
    args = [None if s is None else os.fsencode(s) for s in (source, target, fstype)]
    if libc.mount(*args, ctypes.c_ulong(flags), None if data is None else data.encode()):
        err = ctypes.get_errno()
        raise OSError(err, f"mount on {target}: {os.strerror(err)}")


def kept_flags(path: str) -> int:
    """The mount flags of ``path`` that a bind remount must repeat."""
    bits = os.statvfs(path).f_flag
    flags = sum(ms for st, ms in ST_TO_MS.items() if bits & st)
    return flags | (MS_RELATIME if bits & ST_RELATIME else 0)


def remount(path: str, readonly: bool) -> None:
    """Make the mount at ``path`` read-only or writable, keeping its other flags."""
    flags = MS_REMOUNT | MS_BIND | kept_flags(path) | (MS_RDONLY if readonly else 0)
    mount(None, path, None, flags, None)


def unescape(field: str) -> str:
    """A mountinfo path: spaces and the like come as octal escapes."""
    out, i = [], 0
    while i < len(field):
        if field[i] == "\\" and field[i + 1 : i + 4].isdigit():
            out.append(chr(int(field[i + 1 : i + 4], 8)))
            i += 4
        else:
            out.append(field[i])
            i += 1
    return "".join(out)


def readonly_host() -> None:
    """Make every mount of this namespace read-only: a candidate (uid 0 here) changes nothing.

    The root must succeed; other mounts are best effort (one hidden under another, or
    locked by the kernel, stays as it is).
    """
    with open("/proc/self/mountinfo") as handle:
        points = sorted({unescape(line.split()[4]) for line in handle}, key=len)
    for point in points:
        try:
            remount(point, readonly=True)
        except OSError:
            if point == "/":
                raise


def identity(path: str) -> tuple[int, int] | None:
    """(device, inode) of what ``path`` shows now, or None when it shows nothing."""
    try:
        seen = os.stat(path)
    except OSError:
        return None
    return seen.st_dev, seen.st_ino


def cover_path(path: str, size: str) -> bool:
    """Hide ``path``: a folder under a tmpfs (read-only later), a file under /dev/null."""
    if os.path.isdir(path):
        mount("tmpfs", path, "tmpfs", MS_NOSUID | MS_NODEV, f"mode=0755,size={size}")
        return True
    mount("/dev/null", path, None, MS_BIND, None)
    return False


def make_mountpoint(path: str, folder: bool) -> None:
    """Create ``path`` (inside a cover's tmpfs) so that something can be bound onto it."""
    if folder:
        os.makedirs(path, exist_ok=True)
    else:
        os.makedirs(os.path.dirname(path), exist_ok=True)
        if not os.path.lexists(path):
            os.close(os.open(path, os.O_CREAT | os.O_WRONLY, 0o644))


def parse_cover(options: list[str]) -> dict[str, list[str]]:
    """``--hide P --ro P --rw P --tmp P --size N --chdir P`` (each may repeat)."""
    spec: dict[str, list[str]] = {
        "hide": [],
        "ro": [],
        "rw": [],
        "tmp": [],
        "size": [],
        "chdir": [],
    }
    pairs = iter(options)
    for flag in pairs:
        key = flag.removeprefix("--")
        if key not in spec:
            raise ValueError(f"unknown option {flag}")
        spec[key].append(next(pairs))
    return spec


def drop_privileges() -> None:
    """No capability in any set, none to regain: the covers cannot be unmounted."""
    with open("/proc/sys/kernel/cap_last_cap") as handle:
        last = int(handle.read())
    for cap in range(last + 1):
        prctl(PR_CAPBSET_DROP, cap)
    libc.prctl(PR_CAP_AMBIENT, PR_CAP_AMBIENT_CLEAR_ALL, 0, 0, 0)
    header = (ctypes.c_uint32 * 2)(LINUX_CAPABILITY_VERSION_3, 0)
    data = (ctypes.c_uint32 * 6)()  # effective, permitted, inheritable; two words each
    if libc.capset(header, data) != 0:
        err = ctypes.get_errno()
        raise OSError(err, f"cannot drop capabilities: {os.strerror(err)}")
    prctl(PR_SET_NO_NEW_PRIVS, 1)


def set_up(spec: dict[str, list[str]]) -> None:
    """The candidate's view of the files, then no privilege left; raises OSError on failure."""
    size = spec["size"][-1] if spec["size"] else "50%"
    mount(None, "/", None, MS_REC | MS_PRIVATE, None)  # nothing leaks back to the host
    exposed = []
    for path, writable in [(p, False) for p in spec["ro"]] + [(p, True) for p in spec["rw"]]:
        fd = os.open(path, os.O_PATH | os.O_CLOEXEC)
        exposed.append((path, fd, writable, os.path.isdir(path)))
    exposed.sort(key=lambda e: len(e[0]))  # parents before what lies inside them
    hidden = sorted(
        {(p, identity(p)) for p in spec["hide"] if identity(p)}, key=lambda h: len(h[0])
    )
    readonly_host()
    for path in spec["tmp"]:
        if os.path.isdir(path):
            mount("tmpfs", path, "tmpfs", MS_NOSUID | MS_NODEV, f"mode=1777,size={size}")
    covers = [p for p, seen in hidden if identity(p) == seen and cover_path(p, "4m")]
    for path, fd, writable, folder in exposed:
        held = os.fstat(fd)
        if identity(path) == (held.st_dev, held.st_ino):
            if not writable:
                continue  # in view, and read-only like the rest of the host
        else:
            make_mountpoint(path, folder)  # under a cover: make room for it there
        mount(f"/proc/self/fd/{fd}", path, None, MS_BIND | MS_REC, None)
        remount(path, readonly=not writable)
    # a hidden path inside a re-exposed one is in view again: cover it once more
    covers += [p for p, seen in hidden if identity(p) == seen and cover_path(p, "4m")]
    for path in covers:
        mount(None, path, None, MS_REMOUNT | MS_BIND | MS_RDONLY | MS_NOSUID | MS_NODEV, None)
    for fd in (e[1] for e in exposed):
        os.close(fd)
    if spec["chdir"]:
        os.chdir(spec["chdir"][-1])
    drop_privileges()
