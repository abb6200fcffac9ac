"""File transfer over ccarena's own transport on UDP: ``ccarena send`` and ``ccarena recv``.

The transport is the simulator's sans-IO TCP-like sender and receiver (any TCP flavor of the
catalogue), or UDT's own (``--flavor udt``), driven over a real UDP socket by the ``ccarena-udp`` crate; the wire format is in
``docs/udp-wire.md``. :mod:`ccarena.cli.file_transfer` holds the two commands,
:mod:`ccarena.transfer.record` formats a transfer's record.
"""
