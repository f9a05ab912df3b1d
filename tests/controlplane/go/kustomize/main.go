// Wrapper that builds the real kustomize v5 CLI from the Go module proxy.
package main

import (
	"os"

	"sigs.k8s.io/kustomize/kustomize/v5/commands"
)

func main() {
	if err := commands.NewDefaultCommand().Execute(); err != nil {
		os.Exit(1)
	}
}
