"""The connection: the sans-IO core (``core``), the interfaces declared once
(``interface``: ``Link`` for the layers above, ``TransportAPI``/``WriterAPI``/``PrimsAPI``
for each flavour's drivers). The drivers themselves are ``jetwire.aio.client`` and the
generated ``jetwire._sync.client``, over their flavour's ``_transport`` and ``_prims``."""
