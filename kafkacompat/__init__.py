"""kafkacompat: make clients and admin tools work with whatever Kafka broker they meet."""

from kafkacompat.protocol.versions import VersionRange

__version__ = "0.1.0"

__all__ = ["VersionRange", "__version__"]
