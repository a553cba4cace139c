"""Content packs shipped with amemgym, as data files (one folder per environment family)."""
