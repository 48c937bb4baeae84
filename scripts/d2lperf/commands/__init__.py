"""The pipeline's steps, one module per subcommand of ``d2lperf`` (the table: d2lperf.cli).

Each has ``main(argv)``: its own options, read with argparse. The workflow's rules run them
as ``python -m d2lperf <command>``; each imports what it needs when it runs.
"""
