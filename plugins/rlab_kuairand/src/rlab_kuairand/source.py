"""Find the raw KuaiRand files: an option, ``$RLAB_KUAIRAND_DIR``, the download cache, Zenodo.

The download reads the record's metadata from the Zenodo API, which lists every file with
its MD5 checksum, fetches the archive of the variant, verifies the checksum and unpacks it.
Offline without data, the error is one sentence: the record, the file names, the way out.
"""

from __future__ import annotations

import hashlib
import json
import os
import shutil
import tarfile
import urllib.request
from pathlib import Path

from rlab_core.api import DataUnavailableError
from rlab_kuairand import schema

ENV_VAR = "RLAB_KUAIRAND_DIR"
RECORD_API = f"https://zenodo.org/api/records/{schema.ZENODO_RECORD}"
FILE_URL = f"https://zenodo.org/records/{schema.ZENODO_RECORD}/files/{{key}}?download=1"


def find_files(folder: Path, variant: str) -> Path | None:
    """The folder under ``folder`` (searched recursively) that holds every expected file."""
    folder = Path(folder).expanduser()
    if not folder.is_dir():
        return None
    first = schema.standard_logs(variant)[0]
    for candidate in [folder / first, *sorted(folder.rglob(first))]:
        if candidate.is_file() and all(
            (candidate.parent / name).is_file() for name in schema.expected_files(variant)
        ):
            return candidate.parent
    return None


def missing_files(folder: Path, variant: str) -> list[str]:
    """Expected file names absent from ``folder`` (not searched recursively)."""
    return [name for name in schema.expected_files(variant) if not (folder / name).is_file()]


def offline_message(variant: str, reason: str = "") -> str:
    """One sentence: which record, which files, how to point rlab at them."""
    names = ", ".join(schema.expected_files(variant))
    why = f" ({reason})" if reason else ""
    return (
        f"KuaiRand-{'Pure' if variant == 'pure' else '1K'} data was not found and could not be "
        f"downloaded{why}: get {schema.ARCHIVES[variant]} from Zenodo record "
        f"{schema.ZENODO_RECORD} (https://zenodo.org/records/{schema.ZENODO_RECORD}), unpack it "
        f"so that one folder holds {names}, and point rlab at that folder with "
        f"`-o benchmark.data_dir=PATH` or `export {ENV_VAR}=PATH`."
    )


def _md5(path: Path) -> str:
    digest = hashlib.md5()
    with open(path, "rb") as handle:
        for block in iter(lambda: handle.read(1 << 20), b""):
            digest.update(block)
    return digest.hexdigest()


def _record_files(timeout: float) -> dict[str, str]:
    """``{file key: md5}`` of the record, from the Zenodo API."""
    with urllib.request.urlopen(RECORD_API, timeout=timeout) as response:
        record = json.load(response)
    return {
        entry["key"]: entry["checksum"].removeprefix("md5:") for entry in record.get("files", [])
    }


def download(variant: str, target: Path, timeout: float = 30.0) -> Path:
    """Download, verify (MD5 from the record) and unpack the variant's archive into ``target``."""
    key = schema.ARCHIVES[variant]
    try:
        checksums = _record_files(timeout)
    except OSError as exc:  # URLError, timeouts and DNS failures are OSErrors
        raise DataUnavailableError(offline_message(variant, f"offline: {exc}")) from None
    if key not in checksums:
        raise DataUnavailableError(offline_message(variant, f"the record lists no {key}"))
    target.mkdir(parents=True, exist_ok=True)
    archive = target / (key + ".partial")
    try:
        with (
            urllib.request.urlopen(FILE_URL.format(key=key), timeout=timeout) as response,
            open(archive, "wb") as out,
        ):
            shutil.copyfileobj(response, out, 1 << 20)
    except OSError as exc:
        archive.unlink(missing_ok=True)
        raise DataUnavailableError(offline_message(variant, f"download failed: {exc}")) from None
    if _md5(archive) != checksums[key]:
        archive.unlink(missing_ok=True)
        raise DataUnavailableError(offline_message(variant, f"{key} failed its MD5 check"))
    with tarfile.open(archive) as tar:
        tar.extractall(target / "unpacked", filter="data")
    archive.unlink()
    found = find_files(target / "unpacked", variant)
    if found is None:
        raise DataUnavailableError(offline_message(variant, f"{key} lacks the expected files"))
    return found


def locate(variant: str, data_dir: Path | None, cache_root: Path, allow_download: bool) -> Path:
    """The folder with the real raw files; raises ``DataUnavailableError`` with the way out."""
    given = data_dir or (Path(os.environ[ENV_VAR]) if os.environ.get(ENV_VAR) else None)
    if given is not None:
        found = find_files(given, variant)
        if found is None:
            where = Path(given).expanduser()
            lacking = missing_files(where, variant) if where.is_dir() else ["the folder itself"]
            raise DataUnavailableError(
                offline_message(variant, f"{where} lacks {', '.join(lacking)}")
            )
        return found
    cached = find_files(cache_root / f"download-{variant}", variant)
    if cached is not None:
        return cached
    if not allow_download:
        raise DataUnavailableError(offline_message(variant, "download is off"))
    return download(variant, cache_root / f"download-{variant}")
