"""The ``driver`` fixture: each cluster test runs on trio and on asyncio."""

from tests.support.cluster_drivers import driver

__all__ = ["driver"]
