"""Toy responses of known shape shared by the tests of the suggestions, in experiments and over
REST."""


def saturating_latency(nodes: int, threads: int) -> float:
    """A p95 latency in ms that doubles with every 6 threads beyond what the nodes keep up with
    (fewer as nodes are added) and grows as threads idle below it: 13.5 ms at best, at 1 node and
    10 threads, 16 ms at 1 node and 6 threads, 70 s at 9 nodes and 64 threads."""
    return (8.0 + 1.5 * nodes) * 2.0 ** (max(threads - 12 + 2 * nodes, 0) / 6) + 40.0 / threads
