"""Environment generators: the LLM pipeline and the offline procedural one (docs/design.md §3)."""
