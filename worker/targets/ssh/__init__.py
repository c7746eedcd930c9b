"""The `ssh` target: the operator's own Galera cluster and client machines, reached over SSH.

`hosts` runs commands on the hosts (asyncssh, host keys checked against a known_hosts file),
`nodes` starts, stops and configures each node's server, `target` runs the trials.
"""
