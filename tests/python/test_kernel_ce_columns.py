"""The kernel backend's ``ce_packets``/``ce_bytes`` from TCP_INFO without a kernel run: the
receiver's ``tcpi_received_ce`` and ``tcpi_received_ce_bytes`` (Linux 6.18's struct, 280 bytes)
reach the flow's totals and its flows row; a kernel whose struct ends at ``tcpi_total_rto_time``
(Linux 6.7, 248 bytes) has no such count, and the row says NaN rather than 0. The kernel test
``tests/kernel/test_kernel_ce_count.py`` checks the counts against the relay's marks."""

from __future__ import annotations

import math
import struct

from ccarena.backends.kernel import measured_tables, trafficgen


def _raw(**fields: int) -> bytes:
    values = [fields.get(name, 0) for name in trafficgen.TCP_INFO_FIELDS]
    return struct.pack(trafficgen.TCP_INFO_FORMAT, *values)


def _ce_of(raw: bytes) -> tuple[float, float]:
    totals = trafficgen.totals_from(trafficgen._parse_tcp_info(raw))
    row = measured_tables._ce_columns(totals)
    return measured_tables._num(row["ce_packets"]), measured_tables._num(row["ce_bytes"])


def test_the_receivers_ce_counters_fill_the_columns() -> None:
    raw = _raw(data_segs_in=5600, received_ce=115, received_ce_bytes=115 * 1448, delivered_ce=0)
    assert len(raw) == trafficgen.TCP_INFO_SIZE == 280
    assert _ce_of(raw) == (115, 166_520)
    # No mark received: 0, not NaN.
    assert _ce_of(_raw(data_segs_in=10)) == (0, 0)


def test_a_kernel_without_the_counters_gives_nan() -> None:
    older = _raw(received_ce=7)[:248]  # the struct up to tcpi_total_rto_time
    assert "received_ce" not in trafficgen._parse_tcp_info(older)
    packets, bytes_ = _ce_of(older)
    assert math.isnan(packets) and math.isnan(bytes_)
