"""zelda-rlaif common library: settings, event contracts, the bus, the object store and the game layer.

Every service imports its contracts from here, so producer and consumer can never disagree.
"""

__version__ = "0.1.0"
