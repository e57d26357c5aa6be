"""Stand-in for V-JEPA's package layout (see ../README.md)."""
