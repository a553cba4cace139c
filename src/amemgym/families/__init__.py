"""Environment families: each one brings its own world, stream, checker and scores."""
