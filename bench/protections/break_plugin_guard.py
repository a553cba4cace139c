"""Plug-in calls go straight to the plug-in: no watchdog, no limit, no one-line failure, no type check."""
import inspect

import amemgym.agents.guard as guard


async def _direct(agent, method, fn, *args, expect=None, **kwargs):
    result = fn(*args, **kwargs)
    return await result if inspect.isawaitable(result) else result


guard.call_plugin = _direct

import amemgym.agents.plugin as plugin  # noqa: E402 - bound its own name at import

plugin.call_plugin = _direct
