"""The engine hooks are a package of their own (``engine_hooks/``, import ``otelbench_vllm``),
installed into vLLM's venv, not otelbench's; their pure parts are tested here from the source
tree. vLLM itself is not in otelbench's env: the tests drive the hooks with plain objects shaped
like vLLM's (vLLM's classes are not ours)."""

from __future__ import annotations

import sys
from pathlib import Path

HOOKS_SRC = Path(__file__).resolve().parents[3] / "engine_hooks"
if str(HOOKS_SRC) not in sys.path:
    sys.path.insert(0, str(HOOKS_SRC))
