"""The loop-neutral cluster layer: discovery, controllers, coordinators, features, retries.

Written once, over a small seam (``backend``: ``ClusterBackend`` for the event
loop, ``NodeConnection`` for a connection).  ``core.ClusterCore`` holds the
state; the trio driver (``transport.cluster``) and the asyncio driver
(``aio.cluster``) each implement the backend.  Retries are tenacity's
(``retries``), the one retry mechanism.  Nothing here names trio or asyncio.
"""
