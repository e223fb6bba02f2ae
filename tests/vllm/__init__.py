"""Tests against a real vLLM engine on CPU (marker ``vllm``); see conftest.py."""
