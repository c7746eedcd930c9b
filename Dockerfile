# The galera-doe service image: API (`galera-doe serve`) and worker (`galera-doe worker`).
FROM python:3.11-slim
WORKDIR /srv/galera-doe
COPY pyproject.toml README.md alembic.ini ./
COPY app app
COPY worker worker
COPY experiments experiments
COPY migrations migrations
RUN pip install --no-cache-dir .
USER nobody
CMD ["galera-doe", "serve", "--host", "0.0.0.0"]
