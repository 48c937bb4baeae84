"""The parts of the report's view model, by concern: scripts/render_report.py reads the
tables and runs them into one view, then the page.

The top layer of the library: its parts import the modules below (claims, labels, results,
frameworks, ...) and each other one way (``values`` under all, ``figures_view``,
``claims_view`` and ``provenance_view`` next, ``overview``, ``sections_view`` and
``comparison`` last); no module below imports them.
"""
