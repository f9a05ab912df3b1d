// A loopback redis for the real Argo CD in tests: miniredis, the in-memory redis that
// Argo CD's own `argocd --core` mode runs (cmd/argocd/commands/headless). tests/argocd/build
// compiles it inside the Argo CD module tree, so go.mod pins the miniredis Argo CD pins.
//
//	argocd-redis --addr 127.0.0.1:PORT
//
// It prints "ready ADDR" once it accepts connections and serves until SIGTERM or SIGINT.
package main

import (
	"flag"
	"fmt"
	"os"
	"os/signal"
	"syscall"

	"github.com/alicebob/miniredis/v2"
)

func main() {
	addr := flag.String("addr", "127.0.0.1:0", "loopback address to listen on")
	flag.Parse()
	server := miniredis.NewMiniRedis()
	if err := server.StartAddr(*addr); err != nil {
		fmt.Fprintf(os.Stderr, "argocd-redis: cannot listen on %s: %v\n", *addr, err)
		os.Exit(1)
	}
	fmt.Printf("ready %s\n", server.Addr())
	stop := make(chan os.Signal, 1)
	signal.Notify(stop, syscall.SIGTERM, syscall.SIGINT)
	<-stop
	server.Close()
}
