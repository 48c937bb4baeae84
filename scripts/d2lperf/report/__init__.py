"""The parts of the report's view model, by concern: d2lperf report reads the
tables and runs them through these into one view, then fills the page's template.

The top layer of the library: the parts import the modules below (claims, labels,
results, frameworks, ...) and each other one way only (``values`` under every part;
``overview`` reads ``figures_view``'s keys, ``comparison`` ``claims_view``'s words); no
module below imports them.
"""
