"""The drift engine: live and desired objects in, one decided drift per differing leaf out. Pure."""
