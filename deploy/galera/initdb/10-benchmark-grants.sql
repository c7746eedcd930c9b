-- Run once by the image's entrypoint when a node's datadir is created (with wsrep off, so it is
-- not replicated); the joiners then receive the bootstrap node's accounts by SST. The account
-- itself comes from MARIADB_USER / MARIADB_PASSWORD, so no password is written here. The name
-- must match `user` in deploy/targets.yaml.

-- sysbench creates, fills and drops one schema per client machine: sbtest1, sbtest2, ...
GRANT ALL PRIVILEGES ON `sbtest%`.* TO 'sbtest'@'%';
-- The worker times single-row commits (commit_latency_ms) in a schema of its own.
GRANT ALL PRIVILEGES ON `galera_doe_probe`.* TO 'sbtest'@'%';
-- Factors other than the cluster's shape are server variables, set with SET GLOBAL on every
-- node before a trial (SUPER); max_connections and its kin need CONNECTION ADMIN since 10.5.
GRANT SUPER, CONNECTION ADMIN ON *.* TO 'sbtest'@'%';
