"""Data-analysis tools: ``statistics_analysis`` and ``relationship_analysis``.

Both look at the training split only (the whole data when validation is
disabled): validation data is touched by scoring alone, so what the model
learns from an analysis cannot leak the held-out samples. Importing a tool
module registers its tool; :mod:`srh_core.tools.catalogue` imports them.
"""

from __future__ import annotations
