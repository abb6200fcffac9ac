"""The report's shared text measurements (``plots.shared_text_metrics``): inside the block every
Agg renderer gives exactly what matplotlib's own measurement gives, a second renderer reads the
cached value, mathtext is measured as before, and outside the block (after ``plots.save``)
matplotlib's renderer is untouched."""

from __future__ import annotations

from pathlib import Path

from ccarena.report import plots


def test_shared_text_metrics_measure_as_the_renderer_does_and_leave_matplotlib_as_it_was(
        tmp_path: Path) -> None:
    from matplotlib.backends.backend_agg import RendererAgg
    from matplotlib.font_manager import FontProperties

    own = RendererAgg.get_text_width_height_descent
    assert getattr(own, "__wrapped__", None) is None
    prop = FontProperties(family="DejaVu Sans", size=9)
    with plots.shared_text_metrics():
        shared = RendererAgg.get_text_width_height_descent
        assert shared is not own and shared.__wrapped__ is own
        with plots.shared_text_metrics():  # nested: the outer block's cache, not a second layer
            assert RendererAgg.get_text_width_height_descent is shared
        for dpi in (80, 110):
            first, second = RendererAgg(50, 20, dpi), RendererAgg(300, 200, dpi)
            for text in ("0", "goodput (Mbps)", "cubic ssthresh", "▲ 3 above 120 Mbps"):
                expected = own(first, text, prop, False)
                assert shared(first, text, prop, False) == expected
                assert shared(second, text, prop, False) == expected  # the cached value
            assert shared(first, "$x^2$", prop, True) == own(first, "$x^2$", prop, True)
    assert RendererAgg.get_text_width_height_descent is own

    fig, ax = plots.plt.subplots()
    ax.plot([0, 1], [0, 1], label="cubic")
    ax.legend()
    plots.save(fig, tmp_path / "f.png")
    assert (tmp_path / "f.png").read_bytes().startswith(b"\x89PNG")
    assert RendererAgg.get_text_width_height_descent is own
