"""User folders are slugs again: ids differing only in unsafe characters share one folder."""
import re

from amemgym.families.statetrack import layout

layout.user_folder = lambda user_id: re.sub(r"[^A-Za-z0-9_.-]", "_", user_id)
