"""Skills: folders of instructions (``SKILL.md``) the model reads with ``read_skill``.

Built-in skills live in ``srh_core/skills/builtin/<name>/SKILL.md``; see
:mod:`srh_core.skills.manager` for the folder rules, custom directories and
path confinement.
"""

from __future__ import annotations

from srh_core.skills.errors import CustomToolError, SkillError, SkillNotFoundError
from srh_core.skills.frontmatter import FrontMatterError, split_front_matter
from srh_core.skills.manager import (
    BUILTIN_DIR,
    SKILL_FILE,
    Skill,
    SkillManager,
    SkillProblem,
    default_skill_manager,
    run_skill_manager,
)

__all__ = [
    "BUILTIN_DIR",
    "CustomToolError",
    "SKILL_FILE",
    "FrontMatterError",
    "Skill",
    "SkillError",
    "SkillManager",
    "SkillNotFoundError",
    "SkillProblem",
    "default_skill_manager",
    "run_skill_manager",
    "split_front_matter",
]
