"""Ignore rules: configured rules, webhook presets, Argo CD ignoreDifferences and Flux's own. Pure."""
