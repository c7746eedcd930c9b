"""Wide-area network emulation for the lab: sites in network namespaces, a delay proxy between."""
