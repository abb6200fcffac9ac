"""Figure file formats a command accepts (``--formats``): checked before anything runs, without
loading the plotting stack."""

from __future__ import annotations

from ccarena.errors import UserError

FORMATS = ("png", "svg", "pdf")
"""The figure formats ccarena writes."""


def parse_formats(text: str) -> list[str]:
    """``"png,svg,pdf"`` → the formats, each checked.

    Raises:
        UserError: a format other than png, svg or pdf.
    """
    formats = [f.strip().lower() for f in text.split(",") if f.strip()]
    bad = [f for f in formats if f not in FORMATS]
    if bad or not formats:
        raise UserError(f"--formats: '{','.join(bad) or text}' is not a list of png, svg, pdf "
                        "(e.g. --formats png,svg,pdf)")
    return formats
