# tracescore: `docker build -t tracescore .`, then `docker run -p 4317:4317 -p 4318:4318 tracescore`.
# Settings come from TRACESCORE_* variables (or `serve` flags after the image name); see the README.

# Build stage: install the package and its dependencies into a virtual environment.
FROM python:3.11-slim-trixie AS build
ENV PIP_NO_CACHE_DIR=1 \
    PIP_DISABLE_PIP_VERSION_CHECK=1
RUN python -m venv /opt/tracescore
WORKDIR /src
# What pyproject.toml builds: its readme, its license file and the package tracescore: tracescore/
# (its __init__.py and links to the three folders) and the folders (with their SQL, prompts and data).
COPY pyproject.toml README.md LICENSE ./
COPY tracescore ./tracescore
COPY schemas ./schemas
COPY scoring ./scoring
COPY ingest ./ingest
RUN /opt/tracescore/bin/pip install .

# Runtime stage: the virtual environment only, run by an unprivileged user.
FROM python:3.11-slim-trixie
RUN groupadd --system --gid 10001 tracescore \
    && useradd --system --uid 10001 --gid tracescore --home-dir /var/lib/tracescore --no-create-home \
       --shell /usr/sbin/nologin tracescore \
    && mkdir -p /var/lib/tracescore \
    && chown tracescore:tracescore /var/lib/tracescore
COPY --from=build /opt/tracescore /opt/tracescore
# Defaults as variables, not flags, so that TRACESCORE_* variables given to the container win over them
# (flags win over the environment). The embedded store lives in the volume below; point
# TRACESCORE_STORE at a ClickHouse server (http://user:password@clickhouse:8123) to share it.
ENV PATH=/opt/tracescore/bin:$PATH \
    PYTHONUNBUFFERED=1 \
    TRACESCORE_HOST=0.0.0.0 \
    TRACESCORE_STORE=/var/lib/tracescore
WORKDIR /var/lib/tracescore
USER tracescore
VOLUME ["/var/lib/tracescore"]
# OTLP/gRPC; OTLP/HTTP with /healthz, /readyz, /metrics and /api/*
EXPOSE 4317 4318
# Liveness: /healthz answers while the process serves (slim images have no curl, so Python asks), on
# the health lane when TRACESCORE_HEALTH_PORT sets one (docs/operations/slow-clients.md).
HEALTHCHECK --interval=15s --timeout=5s --start-period=60s --retries=3 \
    CMD ["python", "-c", "import os, urllib.request; urllib.request.urlopen('http://127.0.0.1:%s/healthz' % (os.environ.get('TRACESCORE_HEALTH_PORT') or os.environ.get('TRACESCORE_HTTP_PORT', '4318')), timeout=4)"]
ENTRYPOINT ["tracescore"]
CMD ["serve"]
