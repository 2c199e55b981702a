"""The on-disk compile cache: object code keyed by module, profile, options and host.

A hit needs no LLVM optimisation or code generation: the object file is linked straight
into memory. The directory is ``$OPENPTO_CACHE_DIR/llvm`` when that variable is set, else
the user cache directory (``$XDG_CACHE_HOME`` or ``~/.cache``) ``/openpto/llvm``; the backend's
``cache_dir`` option overrides both and ``cache=False`` turns the cache off. Entries are
written atomically (temporary file + rename), so concurrent processes never read half a
file; an unreadable or truncated entry is simply a miss.
"""
from __future__ import annotations

import hashlib
import json
import os
import tempfile
from functools import lru_cache
from pathlib import Path
from typing import Any

#: bump when the entry format changes
CODEGEN_VERSION = "2"


@lru_cache(maxsize=None)
def code_fingerprint() -> str:
    """A hash of the backend's own sources: editing a rule invalidates every entry."""
    here = Path(__file__).resolve().parent
    h = hashlib.sha256()
    for f in sorted(here.rglob("*.py")):
        h.update(f.relative_to(here).as_posix().encode())
        h.update(f.read_bytes())
    return h.hexdigest()
_MAGIC = b"PTOLLVM1"


def default_dir() -> Path:
    env = os.environ.get("OPENPTO_CACHE_DIR")
    if env:
        return Path(env) / "llvm"
    base = os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache")
    return Path(base) / "openpto" / "llvm"


def key(module_bytes: bytes, profile: str, options: dict[str, Any], host: str) -> str:
    h = hashlib.sha256()
    for part in (CODEGEN_VERSION.encode(), code_fingerprint().encode(), module_bytes, profile.encode(),
                 json.dumps(options, sort_keys=True, default=str).encode(), host.encode()):
        h.update(len(part).to_bytes(8, "little"))
        h.update(part)
    return h.hexdigest()


class DiskCache:
    def __init__(self, directory: Path | str | None = None) -> None:
        self.dir = Path(directory) if directory is not None else default_dir()

    def _path(self, k: str) -> Path:
        return self.dir / k[:2] / (k + ".o")

    def get(self, k: str) -> tuple[bytes, dict[str, Any]] | None:
        """(object code, metadata) stored under ``k``, or None."""
        try:
            data = self._path(k).read_bytes()
        except OSError:
            return None
        if not data.startswith(_MAGIC) or len(data) < len(_MAGIC) + 40:
            return None
        digest, n = data[8:40], int.from_bytes(data[40:48], "little")
        meta_raw, obj = data[48:48 + n], data[48 + n:]
        if hashlib.sha256(meta_raw + obj).digest() != digest:
            return None
        try:
            return obj, json.loads(meta_raw)
        except ValueError:
            return None

    def put(self, k: str, obj: bytes, meta: dict[str, Any]) -> None:
        meta_raw = json.dumps(meta).encode()
        blob = _MAGIC + hashlib.sha256(meta_raw + obj).digest() + len(meta_raw).to_bytes(8, "little") + meta_raw + obj
        path = self._path(k)
        try:
            path.parent.mkdir(parents=True, exist_ok=True)
            fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=".tmp-")
            with os.fdopen(fd, "wb") as f:
                f.write(blob)
            os.replace(tmp, path)
        except OSError:      # a read-only or full disk costs speed, never correctness
            pass
