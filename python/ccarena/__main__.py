"""``python -m ccarena`` and the ``ccarena`` script: the command line (:func:`ccarena.cli.main`)."""

from ccarena.tuning import tune_process


def main() -> None:
    """Run the command line in a process tuned for it (:func:`ccarena.tuning.tune_process`,
    set before the command's modules are imported)."""
    tune_process()
    from ccarena.cli import main as cli_main

    cli_main()


if __name__ == "__main__":
    main()
