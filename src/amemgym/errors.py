"""The error hierarchy: one base class and one subclass per boundary.

A run never lets one of these escape as a traceback: the CLI turns each into a single line
and exit code 2 (bad input) or 1 (a failure during the work).
"""

from __future__ import annotations


class AMemGymError(Exception):
    """Base class of every error amemgym raises on purpose."""

    exit_code = 1


class ConfigError(AMemGymError):
    """A configuration file, preset, flag or agent spec is invalid."""

    exit_code = 2


class DataError(AMemGymError):
    """An environment file (or another input file) is malformed or inconsistent.

    The message names the file, the JSON path and the problem.
    """

    exit_code = 2


class PromptError(AMemGymError):
    """A prompt template is missing, or was rendered with missing or unused variables."""


class LLMError(AMemGymError):
    """A model call failed after its retries, or returned something unusable."""


class MalformedOutput(LLMError):
    """The model answered, but no reply parsed as the requested structure (e.g. it ran into the token limit)."""


class BackendUnavailable(LLMError):
    """A backend (embedded model, embedder, optional library) is not installed or cannot start.

    The message says how to install it.
    """

    exit_code = 2


class AgentError(AMemGymError):
    """A memory agent misbehaved: bad spec, broken snapshot, protocol violation."""


class RunError(AMemGymError):
    """A run directory is inconsistent, or belongs to another environment or protocol."""

    exit_code = 2


class EnvCheckError(AMemGymError):
    """A training environment breaks the reset/step contract; the message says which rule."""
