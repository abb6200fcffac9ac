"""``python -m ccarena`` and the ``ccarena`` script: the command line (:func:`ccarena.cli.main`)."""

from ccarena.collector import collect_less


def main() -> None:
    """Run the command line in a process tuned for it (:func:`ccarena.collector.collect_less`,
    set before the command's modules are imported)."""
    collect_less()
    from ccarena.cli import main as cli_main

    cli_main()


if __name__ == "__main__":
    main()
