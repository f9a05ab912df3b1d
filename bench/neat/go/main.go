// Wrapper that builds the real kubectl-neat CLI from the Go module proxy (bench/neat/build).
package main

import "github.com/itaysk/kubectl-neat/cmd"

func main() {
	cmd.Execute()
}
