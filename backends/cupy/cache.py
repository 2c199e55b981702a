"""The compile cache of host emulation: shared libraries keyed by what decides their code.

The key is a SHA-256 over the generated translation unit (the runtime header inlined, so it
covers every rule and the header), the profile, the options, the compiler flags and the host
toolchain's fingerprint (compiler version, CUDA half/bfloat16 headers). A hit loads the stored
library: the C++ compiler does not run. Generating the unit itself is cheap Python and is
redone on every compile (it also yields the kernel ABIs and fault sites). The GPU path keeps
its cubins in CuPy's own kernel cache (``RawModule``), keyed by source, options, architecture
and NVRTC version.

Directory: ``$OPENPTO_CACHE_DIR/cupy``, else ``$XDG_CACHE_HOME/openpto/cupy`` (``~/.cache``).
"""
from __future__ import annotations

import hashlib
import json
import os
from pathlib import Path
from typing import Any

CACHE_VERSION = "1"


def default_dir() -> Path:
    env = os.environ.get("OPENPTO_CACHE_DIR")
    if env:
        return Path(env) / "cupy"
    base = os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache")
    return Path(base) / "openpto" / "cupy"


def key(source: str, profile: str, options: dict[str, Any], toolchain: str) -> str:
    h = hashlib.sha256()
    for part in (CACHE_VERSION, source, profile, json.dumps(options, sort_keys=True, default=str), toolchain):
        b = part.encode()
        h.update(len(b).to_bytes(8, "little"))
        h.update(b)
    return h.hexdigest()


def path_for(directory: Path, k: str) -> Path:
    return directory / k[:2] / (k + ".so")
