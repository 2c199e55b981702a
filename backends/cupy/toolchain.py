"""Where the native tools are: the host C++ compiler and the CUDA headers (cuda_fp16.h ...).

Host emulation compiles the generated unit with ``$CXX`` (default ``g++``) against the CUDA
toolkit's headers, whose half/bfloat16 types have host implementations. The headers are looked
for under ``$CUDA_HOME`` / ``$CUDA_PATH``, then beside ``nvcc`` on ``PATH``, then in
``/usr/local/cuda``.
"""
from __future__ import annotations

import hashlib
import os
import shutil
import subprocess
from functools import lru_cache
from pathlib import Path


@lru_cache(maxsize=None)
def cuda_include() -> Path | None:
    """The CUDA toolkit's include directory (holding cuda_fp16.h), or None."""
    roots = [os.environ.get(v) for v in ("CUDA_HOME", "CUDA_PATH")]
    nvcc = shutil.which("nvcc")
    if nvcc:
        roots.append(str(Path(nvcc).resolve().parent.parent))
    roots.append("/usr/local/cuda")
    for r in roots:
        if r and (Path(r) / "include" / "cuda_fp16.h").is_file():
            return Path(r) / "include"
    return None


def cxx() -> str | None:
    """The host C++ compiler's path, or None."""
    return shutil.which(os.environ.get("CXX", "g++"))


@lru_cache(maxsize=None)
def host_fingerprint() -> str:
    """The compiler's version line and a hash of the CUDA half/bfloat16 headers: part of the
    host emulation's cache key."""
    exe = cxx()
    version = ""
    if exe:
        try:
            version = subprocess.run([exe, "--version"], capture_output=True, text=True, timeout=30).stdout
        except (OSError, subprocess.SubprocessError):
            version = ""
    h = hashlib.sha256(version.splitlines()[0].encode() if version else b"?")
    inc = cuda_include()
    for name in ("cuda_fp16.h", "cuda_fp16.hpp", "cuda_bf16.h", "cuda_bf16.hpp"):
        p = inc / name if inc else None
        if p is not None and p.is_file():
            h.update(p.read_bytes())
    return h.hexdigest()


def host_available() -> tuple[bool, str]:
    """(True, "") when host emulation can compile here, else why not."""
    if cxx() is None:
        return False, f"no host C++ compiler ({os.environ.get('CXX', 'g++')} not on PATH)"
    if cuda_include() is None:
        return False, "CUDA headers (cuda_fp16.h) not found: set CUDA_HOME"
    return True, ""
