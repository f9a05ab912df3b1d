"""The only side effects: cluster, git repo, forges, files, external tools.

Each edge is a small Protocol with one real implementation. Third-party errors
are re-raised as writeback's own (``raise ForgeError(...) from e``).
"""
