"""Quantities with units: exact values, and errors that say what was expected."""

from __future__ import annotations

import pytest
from ccarena import units
from ccarena.units import UnitError


@pytest.mark.parametrize("text, bps", [
    ("100Mbps", 100_000_000), ("1.5Gbps", 1_500_000_000), ("64kbps", 64_000), ("64Kbps", 64_000),
    ("10 Mbit/s", 10_000_000), ("1bps", 1), ("2.5e6bps", 2_500_000),
])
def test_rates(text, bps):
    assert units.parse_rate_bps(text) == bps


@pytest.mark.parametrize("text, ns", [
    ("20ms", 20_000_000), ("0.1ms", 100_000), ("1.5s", 1_500_000_000), ("250us", 250_000),
    ("250µs", 250_000), ("7ns", 7), ("2min", 120_000_000_000), ("0s", 0),
])
def test_times_are_exact(text, ns):
    assert units.parse_time_ns(text) == ns


@pytest.mark.parametrize("text, size", [
    ("1.5MB", 1_500_000), ("64KiB", 65_536), ("1MiB", 1_048_576), ("200B", 200), ("3 bytes", 3),
])
def test_sizes(text, size):
    assert units.parse_size_bytes(text) == size


def test_percentages_become_fractions():
    assert units.parse_fraction("0.5%") == pytest.approx(0.005)
    assert units.parse_fraction("100%") == 1.0
    assert units.parse_fraction("0%") == 0.0


def test_queue_limits_in_packets_or_bytes():
    assert units.parse_queue_limit("100pkt") == units.QueueLimit(packets=100)
    assert units.parse_queue_limit("150KB") == units.QueueLimit(bytes=150_000)


@pytest.mark.parametrize("parse, text, fragment", [
    (units.parse_rate_bps, "100Mbs", "unknown unit 'Mbs'"),
    (units.parse_rate_bps, "-5Mbps", "must be positive"),
    (units.parse_rate_bps, "0bps", "must be positive"),
    (units.parse_rate_bps, 100, "has no unit"),
    (units.parse_rate_bps, "fast", "is not a rate"),
    (units.parse_time_ns, "20", "has no unit"),
    (units.parse_time_ns, "-1s", "must not be negative"),
    (units.parse_time_ns, "0.5ns", "whole number of nanoseconds"),
    (units.parse_size_bytes, "1.5B", "whole number of bytes"),
    (units.parse_packets, "2.5pkt", "whole number of packets"),
    (units.parse_fraction, "150%", "outside 0%..100%"),
    (units.parse_fraction, "0.01", "has no unit"),
    (units.parse_queue_limit, "12parrots", "not a queue limit"),
])
def test_errors_say_what_was_expected(parse, text, fragment):
    with pytest.raises(UnitError) as err:
        parse(text)
    assert fragment in str(err.value)


def test_mean_and_ci_share_the_unit_of_the_mean():
    assert units.format_mean_ci(units.format_rate, 843e3, 252e3) == "843 ± 250 kbps"
    assert units.format_mean_ci(units.format_rate, 4.42e6, 0.52e6) == "4.42 ± 0.52 Mbps"
    # The half-width is never shown finer than the mean's last digit.
    assert units.format_mean_ci(units.format_time, 0.0404, 0.00019) == "40.4 ± 0.2 ms"
    assert units.format_mean_ci(units.format_rate, 95.1e6, 4.5e-8) == "95.1 ± 0.0 Mbps"
    assert units.format_mean_ci(units.format_rate, 5e6, 0.85e6) == "5.00 ± 0.85 Mbps"
    assert units.format_mean_ci(units.format_rate, 4.42e6, float("nan")) == "4.42 Mbps"


def test_base_units_for_plot_axes():
    assert units.to_base_unit("20ms") == (pytest.approx(0.02), "time_s")
    assert units.to_base_unit("1%") == (pytest.approx(0.01), "fraction")
    assert units.number_and_unit("0.5%") == (0.5, "%")
    assert units.number_and_unit("cubic") is None
