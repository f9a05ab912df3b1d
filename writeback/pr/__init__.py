"""Pull requests: the text (title, body, diffs, markers) and their lifecycle on the forge (publishing)."""
