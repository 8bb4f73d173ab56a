"""``zelda-rlaif up``: the whole loop on one machine, with no external services."""
