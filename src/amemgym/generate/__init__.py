"""Environment generators: the LLM pipeline (SPEC §3.1) and the offline procedural one (SPEC §3.2)."""
