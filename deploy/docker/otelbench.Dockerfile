# otelbench (the CLI with all its dependencies): `otelbench watch` beside live traffic, and
# `otelbench probe`. Build from the repository root:
#   docker build -f deploy/docker/otelbench.Dockerfile -t otelbench/otelbench:0.1.0 .
# Not built on the CI machine (no Docker engine); tests/unit/test_deploy.py checks the COPY
# sources exist and the ports it exposes are the ones compose.yaml and k8s/ use.
FROM python:3.11-slim

WORKDIR /opt/otelbench
COPY pyproject.toml README.md ./
COPY otelbench ./otelbench
RUN python -m pip install --no-cache-dir . && otelbench --help >/dev/null

# otelbench watch: 4318 OTLP/HTTP receiver (--otlp), 9464 Prometheus /metrics (--listen)
RUN useradd --system --uid 10001 --home-dir /data otelbench && mkdir -p /data \
    && chown otelbench /data
EXPOSE 4318 9464
VOLUME ["/data"]
USER 10001
ENTRYPOINT ["otelbench"]
CMD ["watch", "--store", "/data/live.duckdb", "--otlp", "0.0.0.0:4318", \
     "--listen", "0.0.0.0:9464", "--window", "5m", "--retention", "24h"]
