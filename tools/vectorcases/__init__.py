"""Vector cases, one module per protocol; each module registers its suites on import."""
