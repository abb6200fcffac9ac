"""``python -m ccarena`` and the ``ccarena`` script: the command line (:func:`ccarena.cli.main`)."""

from ccarena.process_setup import tune_process


def main() -> None:
    """Run the command line in a process tuned for it (:func:`ccarena.process_setup.tune_process`,
    set before the command's modules are imported)."""
    tune_process()
    from ccarena.cli import main as cli_main

    cli_main()


if __name__ == "__main__":
    main()
