"""What is left of the first run package: the model flags and the Ray executor of statetrack episodes.

Both still mix family-agnostic and statetrack parts (docs/design.md §15): ``flags`` cuts statetrack
environments next to the model flags every family shares, and ``ray_executor`` holds the engine's Ray
helpers next to the statetrack episode job.
"""
