"""Error messages printed as they are (newlines and all)."""
import amemgym.cli_common as cli_common

cli_common.one_line = lambda message, limit=1000: message
