"""Stand-in: siiRL imports this module by name only."""
