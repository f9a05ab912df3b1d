"""Where desired objects come from and where a drifted field is written: one Source per kind."""
