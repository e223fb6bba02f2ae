# vLLM (the official OpenAI-compatible server image) with otelbench's engine hooks installed.
# Build from the repository root:
#   docker build -f deploy/docker/vllm.Dockerfile -t otelbench/vllm-hooks:0.32.0 .
# The hooks enable themselves on any vLLM whose internals pass their load-time checks; support is
# claimed for 0.30-0.32 (ran as a real engine) and 0.33 (sources conform): engine_hooks/README.md,
# "Which vLLM releases". VLLM_VERSION must be one of those (tests/unit/test_deploy.py reads the
# list from engine_hooks/otelbench_vllm/_vllm_internals.py).
# Nothing here is built on the CI machine (no Docker engine): tests/unit/test_deploy.py checks
# that every COPY source exists and the pip lines use --no-deps.
ARG VLLM_VERSION=v0.32.0
FROM vllm/vllm-openai:${VLLM_VERSION}

# Only the sources pip needs (the hooks package; otelbench's package for its guardrail
# middleware, `--middleware otelbench.guardrails.middleware.GuardrailMiddleware`).
COPY engine_hooks /tmp/otelbench-src/engine_hooks
COPY pyproject.toml README.md /tmp/otelbench-src/otelbench/
COPY otelbench /tmp/otelbench-src/otelbench/otelbench

# --no-deps: vLLM already has everything the hooks need (OpenTelemetry API/SDK, OTLP/HTTP
# exporter, prometheus-client); opentelemetry-exporter-prometheus (the hooks' /metrics reader) is
# installed at the version that goes with the image's SDK, as scripts/vllm/setup.sh does.
RUN set -eux; \
    otel_contrib="$(python3 -c 'import importlib.metadata as m; print(m.version("opentelemetry-semantic-conventions"))')"; \
    python3 -m pip install --no-cache-dir --no-deps "opentelemetry-exporter-prometheus==${otel_contrib}"; \
    python3 -m pip install --no-cache-dir --no-deps /tmp/otelbench-src/engine_hooks /tmp/otelbench-src/otelbench; \
    python3 -c 'import otelbench_vllm, otelbench_vllm.stat_logger, opentelemetry.exporter.prometheus'; \
    rm -rf /tmp/otelbench-src

# Installed but inert: a deployment enables the hooks with OTELBENCH_VLLM_HOOKS=1 together with
# the OTLP endpoint, vLLM's --otlp-traces-endpoint and the spool directory (compose.yaml and
# k8s/vllm.yaml do), never the image alone.
ENV OTEL_SERVICE_NAME=vllm
