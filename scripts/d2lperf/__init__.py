"""Shared code for the chapter's sections and the report.

One module per concept: ``stats`` (statistics of samples), ``timing`` (the timing
harness), ``results`` (tidy CSV rows and JSON sidecars), ``machine`` (what machine
this is), ``harness`` (the command line every section script shares).

Everything here imports in every environment: the frameworks' (MXNet's: numpy 1.23, no pandas)
and the workflow one. Nothing here imports MXNet at module level.
"""
