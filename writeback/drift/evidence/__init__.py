"""Evidence that a difference is not a person's: defaults, twins, controller-filled fields, brought defaults. Pure."""
