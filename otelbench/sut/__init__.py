"""Systems under test that otelbench can start for itself: a real vLLM on CPU, or any command.

Example::

    from otelbench.sut import VllmCpuServer, vllm_env_ready

    if vllm_env_ready():
        with VllmCpuServer() as server:
            print(server.base_url)
"""

from __future__ import annotations

from otelbench.sut.command import CommandServer
from otelbench.sut.process import SUT_NICENESS, GroupProcess, ManagedServer
from otelbench.sut.vllm_cpu import (
    VllmCpuServer,
    VllmEnv,
    default_model_dir,
    default_venv,
    otelbench_home,
    vllm_env_ready,
)

__all__ = [
    "SUT_NICENESS",
    "CommandServer",
    "GroupProcess",
    "ManagedServer",
    "VllmCpuServer",
    "VllmEnv",
    "default_model_dir",
    "default_venv",
    "otelbench_home",
    "vllm_env_ready",
]
