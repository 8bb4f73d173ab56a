"""Named errors whose messages tell the user what to do."""


class ZeldaRlaifError(Exception):
    """Base class: every error we raise on purpose carries a sentence a user can act on."""


class SettingsError(ZeldaRlaifError):
    """A setting is missing or invalid; the message names the environment variable."""


class ObjectNotFound(ZeldaRlaifError, KeyError):
    """The requested object-store key does not exist."""

    def __str__(self) -> str:  # KeyError would otherwise quote the message
        return str(self.args[0]) if self.args else "object not found"


class StoreError(ZeldaRlaifError):
    """The object store is unreachable or misconfigured."""


class BusError(ZeldaRlaifError):
    """NATS / JetStream is unreachable or misconfigured."""


class ObjectExists(ZeldaRlaifError):
    """An exclusive (write-once) put found its key already stored; the stored object is left as it was."""
