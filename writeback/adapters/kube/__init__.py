"""The Kubernetes API edge: cluster reads and dry-runs, watches, leases, kubeconfigs, controller objects."""
