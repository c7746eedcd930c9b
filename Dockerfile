# The galera-doe service image: the API (`galera-doe serve`) and the workers (`galera-doe worker`).
# Pinned to a Debian release so that the sysbench below stays the 1.0 the parser is tested with.
FROM python:3.11-slim-bookworm

# Workers run trials on `external` clusters as sysbench processes from this container. No
# mariadbd: a `lab` target (nodes on this machine) needs a worker outside Docker.
RUN apt-get update \
    && apt-get install -y --no-install-recommends sysbench \
    && rm -rf /var/lib/apt/lists/*

ENV PYTHONUNBUFFERED=1
WORKDIR /srv/galera-doe
COPY pyproject.toml README.md alembic.ini ./
COPY app app
COPY worker worker
COPY experiments experiments
COPY migrations migrations
RUN pip install --no-cache-dir .
USER nobody
CMD ["galera-doe", "serve", "--host", "0.0.0.0"]
