#!/usr/bin/env bash
# Idempotent setup of a Debian machine for galera-doe: system packages, running Redis and
# MariaDB, and a .venv with the project and its dev tools. Safe to run again at any time.
set -euo pipefail
cd "$(dirname "$0")/.."

# chromium and chromium-driver: the dashboard's browser tests (Playwright on the system browser).
# openssh-server: the `ssh` target's tests run its sshd in network namespaces (never the service);
# sudo: they drive the emulated hosts through `sudo -n` too.
APT_PACKAGES=(redis-server mariadb-server mariadb-client galera-4 sysbench rsync chromium
    chromium-driver openssh-server sudo)
PYTHON=${PYTHON:-python3}

say() { printf '\033[1m==> %s\033[0m\n' "$*"; }
as_root() { if [ "$(id -u)" -eq 0 ]; then "$@"; else sudo "$@"; fi; }

missing=()
for package in "${APT_PACKAGES[@]}"; do
    dpkg-query -W -f='${Status}' "$package" 2>/dev/null | grep -q "install ok installed" \
        || missing+=("$package")
done
if [ ${#missing[@]} -gt 0 ]; then
    say "installing ${missing[*]}"
    as_root apt-get update -qq
    # A fresh install must not try to start services through an init system that is not there.
    DEBIAN_FRONTEND=noninteractive as_root apt-get install -y -qq "${missing[@]}" >/dev/null
fi

if ! redis-cli -h 127.0.0.1 -p 6379 ping >/dev/null 2>&1; then
    say "starting Redis on 127.0.0.1:6379"
    as_root mkdir -p /var/lib/redis /var/log/redis
    as_root redis-server --daemonize yes --bind 127.0.0.1 -::1 --port 6379 --save "" \
        --appendonly no --dir /var/lib/redis --logfile /var/log/redis/galera-doe.log
    for _ in $(seq 50); do redis-cli -h 127.0.0.1 ping >/dev/null 2>&1 && break; sleep 0.2; done
fi
redis-cli -h 127.0.0.1 -p 6379 ping >/dev/null || { echo "Redis did not start" >&2; exit 1; }

if ! mariadb-admin --protocol=tcp -h 127.0.0.1 -uroot ping >/dev/null 2>&1; then
    if ! mariadb-admin ping >/dev/null 2>&1; then
        say "starting MariaDB"
        as_root mkdir -p /run/mysqld && as_root chown mysql:mysql /run/mysqld
        as_root start-stop-daemon --start --oknodo --background --exec /usr/sbin/mariadbd
        for _ in $(seq 60); do mariadb-admin ping >/dev/null 2>&1 && break; sleep 0.5; done
    fi
    if ! mariadb-admin --protocol=tcp -h 127.0.0.1 -uroot ping >/dev/null 2>&1; then
        # Debian's root uses socket authentication only; the tests log in over TCP.
        say "allowing root over TCP on 127.0.0.1 with an empty password (test machine)"
        as_root mariadb -e "ALTER USER root@localhost IDENTIFIED VIA unix_socket \
            OR mysql_native_password USING PASSWORD('')"
    fi
fi
mariadb --protocol=tcp -h 127.0.0.1 -uroot -e "SELECT 1" >/dev/null \
    || { echo "MariaDB is not reachable at 127.0.0.1:3306 as root" >&2; exit 1; }

"$PYTHON" -c 'import sys; sys.exit(sys.version_info < (3, 11))' \
    || { echo "Python 3.11 or newer is needed (set PYTHON=...)" >&2; exit 1; }
if [ ! -x .venv/bin/python ]; then
    say "creating .venv"
    "$PYTHON" -m venv .venv
fi
if [ ! -f .venv/.installed ] || [ pyproject.toml -nt .venv/.installed ]; then
    say "installing galera-doe and its dev tools into .venv"
    .venv/bin/pip install -q --upgrade pip
    .venv/bin/pip install -q -e '.[dev]'
    touch .venv/.installed
fi

say "migrating the default database"
.venv/bin/alembic upgrade head >/dev/null
say "setup done"
