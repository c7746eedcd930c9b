"""The lab: a real local Galera cluster of `mariadbd` processes, the default real target.

layout (where it lives, its ports and option files), state (what it records and which processes
are its own), datadirs (initialising and choosing them), supervisor (`LabCluster`: start, grow,
shrink, restart, stop), procfs (what /proc says of its processes), cli (`python -m worker.lab`).
"""
