from writeback.cli import entrypoint

entrypoint()
