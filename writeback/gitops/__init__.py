"""The GitOps controllers (Argo CD, Flux): their objects, applied revisions, ignore rules, suspend and resume."""
