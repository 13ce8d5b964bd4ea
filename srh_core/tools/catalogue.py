"""The built-in tool modules; importing this module registers every built-in tool.

Each tool module registers its classes with ``@BaseTool.register(name)`` when
imported. The tool registry imports this module on its first lookup, so
callers (the agent, process-pool workers, Celery tool workers, user code)
never need to import it themselves. A new built-in tool module is listed
here, and its classes in :mod:`srh_core.tools`.
"""

from __future__ import annotations

# --- formula tools ---------------------------------------------------------
import srh_core.tools.constants  # noqa: F401
import srh_core.tools.eic  # noqa: F401
import srh_core.tools.evaluate  # noqa: F401
import srh_core.tools.harmonic  # noqa: F401
import srh_core.tools.monomial_sum  # noqa: F401
import srh_core.tools.polynomial  # noqa: F401
import srh_core.tools.power_law  # noqa: F401
import srh_core.tools.pysr  # noqa: F401
import srh_core.tools.rational  # noqa: F401
import srh_core.tools.search  # noqa: F401
import srh_core.tools.sindy  # noqa: F401

# --- analysis, code, workspace and skill tools -----------------------------
# isort: split
import srh_core.tools.analysis.properties  # noqa: F401
import srh_core.tools.analysis.relationship  # noqa: F401
import srh_core.tools.analysis.statistics  # noqa: F401
import srh_core.tools.code  # noqa: F401
import srh_core.tools.code_model  # noqa: F401
import srh_core.tools.context_data  # noqa: F401
import srh_core.tools.evaluator_check  # noqa: F401
import srh_core.tools.model_tools  # noqa: F401
import srh_core.tools.pdf  # noqa: F401
import srh_core.tools.skill_authoring  # noqa: F401
import srh_core.tools.skills  # noqa: F401
import srh_core.tools.source  # noqa: F401
import srh_core.tools.web  # noqa: F401
import srh_core.tools.workspace_shell  # noqa: F401
