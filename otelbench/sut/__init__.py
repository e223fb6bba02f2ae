"""Systems under test that otelbench can start for itself: a real vLLM on CPU, for now.

Example::

    from otelbench.sut import VllmCpuServer, vllm_env_ready

    if vllm_env_ready():
        with VllmCpuServer() as server:
            print(server.base_url)
"""

from __future__ import annotations

from otelbench.sut.vllm_cpu import (
    VllmCpuServer,
    VllmEnv,
    VllmProcess,
    default_model_dir,
    default_venv,
    otelbench_home,
    vllm_env_ready,
)

__all__ = [
    "VllmCpuServer",
    "VllmEnv",
    "VllmProcess",
    "default_model_dir",
    "default_venv",
    "otelbench_home",
    "vllm_env_ready",
]
