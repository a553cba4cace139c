"""The state-tracking family (AMemGym): users whose state evolves over periods, asked multiple-choice questions.

Its data model (``data``), generators (``generate``), user simulator (``simulate``), MCQ scoring
(``asking``), metrics (``metrics``), episode runner (``runner``, ``episode``, ``schedule``, ``questioning``,
``results``), validity suite (``validity``) and the original tool's entry points (``compat``) live here; ``family``
is its registration with the engine (docs/design.md §15).
"""
