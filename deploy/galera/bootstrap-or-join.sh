#!/bin/bash
# Entrypoint of galera-1: start a new cluster (--wsrep-new-cluster) only when that cannot split
# it, else join the others; then hand over to the image's own entrypoint.
#
# A bare --wsrep-new-cluster on every start would, after galera-1 alone restarts or loses its
# volume, either refuse to start (not safe_to_bootstrap) or found a second cluster next to the
# running one. So: bootstrap when no other node answers on its group port AND this datadir is new
# or was the last to leave cleanly (safe_to_bootstrap: 1); `docker compose stop` stops galera-1
# last, since the other nodes depend on it. After a crash of every node none is safe: pick the
# most advanced node by hand (Galera's documented recovery) and set safe_to_bootstrap: 1 there.
set -euo pipefail

datadir=${GALERA_DATADIR:-/var/lib/mysql}
bootstrap=yes
for peer in ${GALERA_PEERS:-}; do
    host=${peer%:*}
    port=4567
    [ "$peer" != "$host" ] && port=${peer##*:}
    if timeout 3 bash -c 'exec 3<>"/dev/tcp/$0/$1"' "$host" "$port" 2>/dev/null; then
        echo "galera: $peer answers: joining its cluster" >&2
        bootstrap=no
    fi
done
if [ -f "$datadir/grastate.dat" ] \
    && ! grep -Eq '^safe_to_bootstrap:[[:space:]]*1[[:space:]]*$' "$datadir/grastate.dat"; then
    echo "galera: $datadir/grastate.dat is not safe_to_bootstrap: joining" >&2
    bootstrap=no
fi
if [ "$bootstrap" = yes ]; then
    echo "galera: no other node answers: starting a new cluster" >&2
    set -- "$@" --wsrep-new-cluster
fi
exec docker-entrypoint.sh "$@"
