"""What is left of the first run package: the Ray executor of statetrack episodes (``ray_executor``).

It still holds the Ray helpers every family's executor uses (``start_ray``, ``check_endpoints``,
``task_config``, ``task_slots``) next to the statetrack episode job, so it stays here until the two are
apart (docs/design.md §14).
"""
